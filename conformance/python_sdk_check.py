"""Drives manvault with the official Python MCP SDK, as a real client would.

Usage: python_sdk_check.py MANVAULT_BINARY WORKSPACE CASES_DIR

Initialises a session, lists the tools, and calls each listed tool once with the input of
its first success case in conformance/cases/ (after the earlier cases of its file that
capture the variables its input names, such as a trace id), checking that the SDK accepts
the result (structured content present, no error); then runs the daily-log workflow through
the vault tools and a manual search that follows the proposed next actions. Exits non-zero
with a list of problems otherwise.
"""

import asyncio
import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def first_success_plans(cases_dir: Path) -> dict:
    """Per tool, the cases to run for its first success case, in file order: the earlier
    cases of its file that capture the variables its input names (`${name}`), then itself."""
    plans = {}
    for path in sorted(cases_dir.glob("*.json")):
        suite = json.loads(path.read_text(encoding="utf-8"))
        if suite.get("setup") or suite.get("env"):
            continue  # those cases depend on a prepared workspace
        captured_by = {}
        for case in suite["cases"]:
            needed = list(dict.fromkeys(re.findall(r"\$\{(\w+)\}", json.dumps(case["input"]))))
            ready = all(name in captured_by for name in needed)
            if case.get("expect") == "ok" and ready and case["tool"] not in plans:
                plans[case["tool"]] = [captured_by[name] for name in needed] + [case]
            for name in case.get("capture", {}):
                captured_by[name] = case
    return plans


def substitute(value, variables: dict):
    """`${name}` replaced by a captured value, as the conformance runner does."""
    if isinstance(value, str):
        whole = re.fullmatch(r"\$\{(\w+)\}", value)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        return re.sub(r"\$\{(\w+)\}", lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, variables) for key, item in value.items()}
    return value


def pointer(document, path: str):
    """The value at a JSON pointer, or None."""
    for part in [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]:
        if isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        elif isinstance(document, dict) and part in document:
            document = document[part]
        else:
            return None
    return document


async def check(binary: str, workspace: str, cases_dir: Path) -> list:
    problems = []
    env = dict(os.environ, WORKSPACE_ROOT=workspace, LOG_LEVEL="error")
    params = StdioServerParameters(command=binary, args=["serve"], env=env)
    plans = first_success_plans(cases_dir)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            names = [tool.name for tool in listed.tools]
            if not names:
                problems.append("tools/list is empty")
            for tool in listed.tools:
                if tool.output_schema is None or tool.annotations is None:
                    problems.append(f"{tool.name}: missing outputSchema or annotations")
            for name in names:
                if name not in plans:
                    problems.append(f"{name}: no success case to call it with")
                    continue
                variables = {}
                for case in plans[name]:
                    result = await session.call_tool(case["tool"], substitute(case["input"], variables))
                    if result.is_error:
                        problems.append(f"{name}: {case['tool']} error {result.content[0].text}")
                        break
                    if result.structured_content is None:
                        problems.append(f"{name}: {case['tool']} gave no structuredContent")
                        break
                    for variable, path in case.get("capture", {}).items():
                        variables[variable] = pointer(result.structured_content, path)
            print(f"python sdk: called {len(names)} tools")
            if "vault_create" in names:
                problems.extend(await daily_workflow(session))
            if "manual_find" in names:
                problems.extend(await search_workflow(session))
    return problems


async def daily_workflow(session) -> list:
    """requirements §2's daily log, as an agent would run it: create today's file, append
    twice, read it back by range and by scan (following the proposed next scan), and see
    replace refused."""
    problems = []
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    path = f"artifacts/daily/{today}.md"

    async def call(name, arguments, expect_error=None):
        result = await session.call_tool(name, arguments)
        if expect_error:
            body = json.loads(result.content[0].text) if result.is_error else {}
            if body.get("code") != expect_error:
                problems.append(f"daily: {name} should fail with {expect_error}: {result}")
            return None
        if result.is_error:
            problems.append(f"daily: {name} failed: {result.content[0].text}")
            return {}
        return result.structured_content

    await call("vault_create", {"path": path, "content": f"# {today}\n"})
    for entry in ("- first entry\n", "- second entry\n"):
        await call("vault_write", {"path": path, "content": entry, "mode": "append"})
    read = await call("vault_read", {"path": path, "range": {"start_line": 1, "end_line": 3}})
    if read.get("text") != f"# {today}\n- first entry\n- second entry":
        problems.append(f"daily: read back {read.get('text')!r}")
    if [a["type"] for a in read.get("next_actions", [])] != ["vault_write"]:
        problems.append(f"daily: read should propose an append: {read.get('next_actions')}")
    scanned = []
    scan = await call("vault_scan", {"path": path, "chunk_lines": 2})
    while scan:
        scanned.append(scan["text"])
        action = scan["next_actions"][0]
        if action["type"] == "stop":
            break
        scan = await call("vault_scan", action["params"])
    if "\n".join(scanned) != read.get("text"):
        problems.append(f"daily: scan gave {scanned!r}")
    await call("vault_replace", {"path": path, "find": "first", "replace": "x"}, expect_error="forbidden")
    await call("vault_write", {"path": path, "content": "x\n", "mode": "overwrite"}, expect_error="forbidden")
    if not problems:
        print("python sdk: daily workflow ok")
    return problems


async def search_workflow(session) -> list:
    """requirements §6.1 as an agent would run it: ask manual_find for everything about a
    topic, then make the proposed calls exactly as proposed (params passed through) and
    check that they lead to the relevant sections, the rule and the FAQ that contradicts it."""
    problems = []
    found = await session.call_tool("manual_find", {"query": "有給休暇の繰越し"})
    if found.is_error or found.structured_content is None:
        return [f"search: manual_find failed: {found.content[0].text}"]
    answer = found.structured_content
    if len(json.dumps(answer, ensure_ascii=False, separators=(",", ":"))) > 1200:
        problems.append("search: the manual_find answer exceeds 1,200 characters")
    seen = {}
    for action in answer["next_actions"]:
        if action["type"] == "stop":
            continue
        result = await session.call_tool(action["type"], action["params"])
        if result.is_error:
            problems.append(f"search: proposed {action['type']} failed: {result.content[0].text}")
            continue
        key = action["params"].get("kind") or action["params"].get("scope") or action["type"]
        seen[key] = result.structured_content
    # A ref without start_line starts at line 1.
    top = [(item["path"], item.get("start_line", 1)) for item in seen.get("integrated_top", {}).get("items", [])]
    if ("01-leave.md", 22) not in top:
        problems.append(f"search: the 繰越し section is not in the integrated top: {top}")
    if "最大二十日" not in seen.get("section", {}).get("text", ""):
        problems.append("search: the proposed read does not return the 繰越し section")
    conflicting = [ref["path"] for item in seen.get("conflicts", {}).get("items", []) for ref in item["conflict_with"]]
    if "notes/faq.md" not in conflicting:
        problems.append(f"search: the FAQ's 10日 is not reported as a conflict: {conflicting}")
    if not problems:
        print("python sdk: search workflow ok")
    return problems


def main() -> int:
    binary, workspace, cases_dir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    problems = asyncio.run(check(binary, workspace, cases_dir))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
