"""The end-to-end workflow of issue 5, driven by the official Python MCP SDK as an agent
would run it against the example workspace.

Usage: workflow_check.py MANVAULT_BINARY WORKSPACE

get_tooling_guide -> manual_find -> manual_hits -> bridge_copy_section into drafts/ ->
vault_create of a JSON flowchart artifact citing the copied lines (one element without a
source, and part of the copy not cited) -> artifact_audit -> vault_coverage -> vault_scan
of the uncovered ranges -> vault_write of the fixed artifact -> vault_coverage, until it
says stop; then today's daily log, created and appended to.

Where a step answers with next_actions, the next step must be among the proposed types and
is called with the proposed params as they are (completed only where the output schema
declares them partial). bridge_copy_section, vault_create and vault_write answer without
next_actions (metadata of a write); the step after each is the agent's plan, which the
tooling guide's workflow and the answer's data (written_lines) carry. After the session,
the statistics file must show the copy counted as a use of the search it followed.
Answers leave out what is empty, zero or false (the server's instructions say so), so an
optional field is read with .get().

Exits non-zero with a list of problems otherwise.
"""

import asyncio
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

DRAFT = "drafts/leave-procedure.md"
ARTIFACT = "artifacts/leave-procedure.json"
PROMPT = "休暇の申請手続きをマニュアルから転記して、フローチャートの成果物にまとめて"


class Problems(Exception):
    """A step went wrong; the workflow cannot go on."""


class Agent:
    def __init__(self, session):
        self.session = session
        self.log = []

    async def call(self, name, arguments):
        result = await self.session.call_tool(name, arguments)
        if result.is_error:
            raise Problems(f"{name} {json.dumps(arguments, ensure_ascii=False)}: {result.content[0].text}")
        self.log.append(name)
        return result.structured_content

    @staticmethod
    def proposed(answer, tool, step):
        """The params of the first action of type `tool` that `answer` proposes."""
        types = [action["type"] for action in answer.get("next_actions", [])]
        for action in answer["next_actions"]:
            if action["type"] == tool:
                return action["params"]
        raise Problems(f"{step}: next_actions {types} do not lead to {tool}")


def element(id_, text, kind, lines, next_=()):
    """A flowchart element citing `lines` ((start, end) pairs) of the draft."""
    return {
        "id": id_,
        "text": text,
        "kind": kind,
        "source_lines": [{"path": DRAFT, "start_line": s, "end_line": e} for s, e in lines],
        "next": list(next_),
    }


def assert_no_copied_line(answer, draft_text):
    """The bridge answer holds none of the copied lines (those long enough to tell)."""
    text = json.dumps(answer, ensure_ascii=False)
    for line in draft_text.splitlines():
        line = line.strip()
        if len(line) >= 4 and line in text:
            raise Problems(f"bridge_copy_section answered with copied text: {line!r}")


async def workflow(agent, today):
    guide = await agent.call("get_tooling_guide", {"prompt": PROMPT})
    if guide["first_tool"] != "manual_find":
        raise Problems(f"get_tooling_guide: first_tool {guide['first_tool']}, expected manual_find")
    steps = [w["steps"] for w in guide["workflows"] if w["name"] == "transcription"]
    if not steps or steps[0][:3] != ["manual_find", "manual_hits", "bridge_copy_section"]:
        raise Problems(f"get_tooling_guide: no transcription workflow through the bridge: {guide['workflows']}")

    found = await agent.call("manual_find", {"query": "休暇の申請手続き"})
    trace_id = found["trace_id"]
    hits = await agent.call("manual_hits", agent.proposed(found, "manual_hits", "manual_find"))
    # A hit of a place kind is itself a ref, passed on as it is (score and signals included).
    refs = [item for item in hits["items"] if item.get("path")]
    procedure = [r for r in refs if r["path"] == "01-leave.md" and "申請" in r.get("title", "")]
    if not procedure:
        raise Problems(f"manual_hits: no ref to the application procedure among {refs}")

    copy = await agent.call(
        "bridge_copy_section",
        {"ref": procedure[0], "dest_path": DRAFT, "trace_id": trace_id},
    )
    first, last = copy["written_lines"]["start_line"], copy["written_lines"]["end_line"]
    if copy["origin"] != "front_matter" or last - first < 4:
        raise Problems(f"bridge_copy_section: {copy}")
    draft = await agent.call("vault_read", {"path": DRAFT, "full": True})
    assert_no_copied_line(copy, draft["text"])

    # A first artifact from the copied lines: the rejection path has no source yet, and
    # the end of the copy is not cited.
    chart = {
        "title": "休暇の申請手続き",
        "source_manual_ids": [copy["source"]["manual_id"]],
        "elements": [
            element("apply", "申請する", "start", [(first, first + 2)], ["approve"]),
            element("approve", "上長が承認するか", "decision", [(first + 2, first + 3)], ["done", "reject"]),
            element("done", "取得", "end", [(first + 3, first + 4)]),
            {"id": "reject", "text": "事後申請は認めない", "kind": "end"},
        ],
    }
    await agent.call("vault_create", {"path": ARTIFACT, "content": json.dumps(chart, ensure_ascii=False)})

    audit = await agent.call("artifact_audit", {"path": ARTIFACT})
    if not audit.get("severe") or [f["kind"] for f in audit.get("findings", [])] != ["no_source"]:
        raise Problems(f"artifact_audit: expected one severe no_source finding: {audit}")
    agent.proposed(audit, "vault_scan", "artifact_audit")  # severe: a full scan is offered
    coverage = await agent.call("vault_coverage", agent.proposed(audit, "vault_coverage", "artifact_audit"))
    if coverage["coverage_ratio"] >= 0.9 or not coverage.get("uncovered_ranges"):
        raise Problems(f"vault_coverage: the first artifact should leave lines uncovered: {coverage}")

    for round_ in range(10):
        if coverage["next_actions"][0]["type"] == "stop":
            break
        scan = await agent.call("vault_scan", agent.proposed(coverage, "vault_scan", "vault_coverage"))
        read = scan["applied_range"]
        # The agent grounds what it read: a new element for the scanned lines, and the
        # rejection path on the copy's last lines.
        chart["elements"].append(
            element(f"scanned_{round_}", "確認した記述", "note", [(read["start_line"], read["end_line"])])
        )
        chart["elements"][3]["source_lines"] = [{"path": DRAFT, "start_line": last - 1, "end_line": last}]
        await agent.call(
            "vault_write",
            {"path": ARTIFACT, "mode": "overwrite", "content": json.dumps(chart, ensure_ascii=False)},
        )
        coverage = await agent.call("vault_coverage", {"path": DRAFT, "artifact_paths": [ARTIFACT]})
    else:
        raise Problems(f"vault_coverage never said stop: {coverage}")
    if coverage.get("uncovered_ranges") or coverage["coverage_ratio"] != 1.0:
        raise Problems(f"vault_coverage stopped short: {coverage}")
    fixed = await agent.call("artifact_audit", {"path": ARTIFACT})
    if fixed.get("severe"):
        raise Problems(f"artifact_audit of the fixed artifact: {fixed['findings']}")

    daily = f"artifacts/daily/{today}.md"
    await agent.call("vault_create", {"path": daily, "content": f"# {today}\n"})
    read = await agent.call("vault_read", {"path": daily, "range": {"start_line": 1, "end_line": 1}})
    append = dict(agent.proposed(read, "vault_write", "vault_read of the daily log"))
    append["content"] = f"- {ARTIFACT}: 休暇の申請手続きを図にした（{DRAFT} の全行を引用）\n"
    await agent.call("vault_write", append)
    return trace_id


def usage_counted(workspace, trace_id):
    """Whether the statistics file holds the usage of `trace_id` with the copy found among
    its candidates (written when the trace closes: at the latest when the server stops)."""
    stats = Path(workspace, "vault", ".system", "adaptive_stats.jsonl")
    if not stats.exists():
        return False
    for line in stats.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "usage" and record.get("trace_id") == trace_id:
            return record["used_refs"] >= 1 and record["used_found"] >= 1
    return False


async def check(binary, workspace):
    env = dict(os.environ, WORKSPACE_ROOT=workspace, LOG_LEVEL="error")
    params = StdioServerParameters(command=binary, args=["serve"], env=env)
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            agent = Agent(session)
            try:
                trace_id = await workflow(agent, today)
            except Problems as problem:
                return [f"after {' -> '.join(agent.log)}: {problem}"]
    print("workflow: " + " -> ".join(agent.log))
    if not usage_counted(workspace, trace_id):
        return [f"the copy under {trace_id} was not counted as a use of the search"]
    return []


def main():
    binary, workspace = sys.argv[1], sys.argv[2]
    problems = asyncio.run(check(binary, workspace))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
