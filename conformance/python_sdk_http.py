"""Drives `manvault serve --http` with the official Python MCP SDK over streamable HTTP
with a bearer token, as a remote client would.

Usage: python_sdk_http.py URL TOKEN CHECK [ARG]

CHECK is one of
  features            resources/read of a section equals manual_read's text; resources
                      and templates list; the four prompts list and one renders; completion
                      answers; after logging/setLevel a call's log line arrives.
  progress QUERY      manual_find QUERY with a progress callback: at least two
                      notifications, strictly increasing, the last one complete. Prints
                      one JSON line with the counts and times.
  cancel TOOL [FILE]  starts TOOL (vault_search or bridge_copy_file, with the arguments the
                      test prepared; FILE, a manual file, is appended to first, so the
                      call waits for its index to be rebuilt, however fast the machine
                      indexed it at start), abandons it after 0.5 s (the SDK sends
                      notifications/cancelled), then checks the session still answers.
                      Prints one JSON line.

Exits non-zero with a list of problems otherwise.
"""

import asyncio
import json
import sys
import time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

CANCEL_ARGUMENTS = {
    "vault_search": {"query": "障害対応"},
    "bridge_copy_file": {"manual_id": "big", "path": "big.md", "dest_path": "notes/big-copy.txt"},
}


async def features(session: ClientSession) -> list:
    problems = []
    section = await session.read_resource("manual://handbook/01-leave.md#L22")
    read = await session.call_tool(
        "manual_read",
        {"ref": {"target": "manual", "manual_id": "handbook", "path": "01-leave.md", "start_line": 22}, "scope": "section"},
    )
    if section.contents[0].text != read.structured_content["text"]:
        problems.append("resources/read of a section differs from manual_read's text")
    if "繰越し" not in section.contents[0].text:
        problems.append(f"the section read is not the 繰越し section: {section.contents[0].text[:80]!r}")
    listed = await session.list_resources()
    uris = [resource.uri for resource in listed.resources]
    if "manual://handbook/01-leave.md" not in [str(uri) for uri in uris]:
        problems.append(f"resources/list lacks the manual file: {uris[:5]}")
    templates = await session.list_resource_templates()
    if len(templates.resource_templates) != 3:
        problems.append(f"expected 3 resource templates, got {len(templates.resource_templates)}")
    prompts = await session.list_prompts()
    names = [prompt.name for prompt in prompts.prompts]
    if names != ["exhaustive_lookup", "transcription", "artifact_audit", "daily_log"]:
        problems.append(f"prompts/list: {names}")
    rendered = await session.get_prompt("exhaustive_lookup", {"topic": "有給休暇の繰越し"})
    if "manual_find" not in rendered.messages[0].content.text:
        problems.append("the exhaustive_lookup prompt does not name manual_find")
    completion = await session.complete(
        ref={"type": "ref/resource", "uri": "manual://{manual_id}/{path}#L{line}"},
        argument={"name": "manual_id", "value": "hand"},
    )
    if completion.completion.values != ["handbook"]:
        problems.append(f"completion of manual_id: {completion.completion.values}")
    if not problems:
        print("python sdk over http: resources, prompts, completion ok")
    return problems


async def logging_check(url: str, token: str) -> list:
    """After setLevel info, the log line of the session's own call arrives."""
    received = []

    async def on_log(params):
        received.append(params)

    async with connect(url, token) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            await session.initialize()
            await session.set_logging_level("info")
            await session.call_tool("manual_list", {})
            for _ in range(100):
                if any(isinstance(m.data, dict) and m.data.get("tool") == "manual_list" for m in received):
                    break
                await asyncio.sleep(0.05)
    calls = [m for m in received if isinstance(m.data, dict) and m.data.get("tool") == "manual_list"]
    if not calls:
        return [f"no log message for the call arrived: {received}"]
    if calls[0].data.get("actor") != "alice" or calls[0].level != "info":
        return [f"unexpected log message: {calls[0]}"]
    print("python sdk over http: logging ok")
    return []


async def progress(session: ClientSession, query: str) -> list:
    reports = []
    started = time.monotonic()

    async def on_progress(value, total, message):
        reports.append({"progress": value, "total": total, "message": message, "at_ms": round((time.monotonic() - started) * 1000)})

    result = await session.call_tool("manual_find", {"query": query}, progress_callback=on_progress)
    elapsed_ms = round((time.monotonic() - started) * 1000)
    problems = []
    if result.is_error:
        problems.append(f"manual_find failed: {result.content[0].text}")
    if len(reports) < 2:
        problems.append(f"expected at least two progress notifications, got {reports}")
    elif any(b["progress"] <= a["progress"] for a, b in zip(reports, reports[1:])):
        problems.append(f"progress does not increase: {[r['progress'] for r in reports]}")
    elif reports[-1]["progress"] != reports[-1]["total"]:
        problems.append(f"the last progress is not complete: {reports[-1]}")
    print(json.dumps({
        "notifications": len(reports),
        "sections": reports[-1]["total"] if reports else None,
        "first_ms": reports[0]["at_ms"] if reports else None,
        "last_ms": reports[-1]["at_ms"] if reports else None,
        "call_ms": elapsed_ms,
        "candidates": (result.structured_content or {}).get("summary", {}).get("candidates"),
    }))
    return problems


async def cancel(session: ClientSession, tool: str, changed_file: str | None) -> list:
    if changed_file:
        with open(changed_file, "a", encoding="utf-8") as file:
            file.write("\n## 追記\n\n変更された節。\n")
    started = time.monotonic()
    with anyio.move_on_after(0.5) as scope:
        await session.call_tool(tool, CANCEL_ARGUMENTS[tool])
    problems = []
    if not scope.cancelled_caught:
        problems.append(f"{tool} finished before it could be cancelled; make it longer")
    abandoned_ms = round((time.monotonic() - started) * 1000)
    listed = await session.call_tool("vault_ls", {"relative_dir": "notes"})
    if listed.is_error:
        problems.append(f"the session does not answer after the cancel: {listed.content[0].text}")
    print(json.dumps({"tool": tool, "abandoned_ms": abandoned_ms}))
    return problems


def connect(url: str, token: str):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(300.0))
    return streamable_http_client(url, http_client=client)


async def run(url: str, token: str, check: str, arg: str | None, extra: str | None) -> list:
    if check == "features":
        problems = await logging_check(url, token)
    else:
        problems = []
    async with connect(url, token) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if check == "features":
                problems += await features(session)
            elif check == "progress":
                problems += await progress(session, arg)
            elif check == "cancel":
                problems += await cancel(session, arg, extra)
            else:
                problems.append(f"unknown check {check}")
    return problems


def main() -> int:
    url, token, check = sys.argv[1], sys.argv[2], sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else None
    extra = sys.argv[5] if len(sys.argv) > 5 else None
    problems = asyncio.run(run(url, token, check, arg, extra))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
