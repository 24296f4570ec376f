"""Drives manvault with the official Python MCP SDK, as a real client would.

Usage: python_sdk_check.py MANVAULT_BINARY WORKSPACE CASES_DIR

Initialises a session, lists the tools, and calls each listed tool once with the input of
its first success case in conformance/cases/, checking that the SDK accepts the result
(structured content present, no error); then runs the daily-log workflow through the vault
tools. Exits non-zero with a list of problems otherwise.
"""

import asyncio
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def first_success_inputs(cases_dir: Path) -> dict:
    """The input of the first case expected to succeed, per tool, in file order."""
    inputs = {}
    for path in sorted(cases_dir.glob("*.json")):
        suite = json.loads(path.read_text(encoding="utf-8"))
        if suite.get("setup") or suite.get("env"):
            continue  # those cases depend on a prepared workspace
        for case in suite["cases"]:
            if case.get("expect") == "ok" and "${" not in json.dumps(case["input"]):
                inputs.setdefault(case["tool"], case["input"])
    return inputs


async def check(binary: str, workspace: str, cases_dir: Path) -> list:
    problems = []
    env = dict(os.environ, WORKSPACE_ROOT=workspace, LOG_LEVEL="error")
    params = StdioServerParameters(command=binary, args=["serve"], env=env)
    inputs = first_success_inputs(cases_dir)
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
                if name not in inputs:
                    problems.append(f"{name}: no success case to call it with")
                    continue
                result = await session.call_tool(name, inputs[name])
                if result.is_error:
                    problems.append(f"{name}: error {result.content[0].text}")
                elif result.structured_content is None:
                    problems.append(f"{name}: no structuredContent")
            print(f"python sdk: called {len(names)} tools")
            if "vault_create" in names:
                problems.extend(await daily_workflow(session))
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


def main() -> int:
    binary, workspace, cases_dir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    problems = asyncio.run(check(binary, workspace, cases_dir))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
