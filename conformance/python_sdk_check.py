"""Drives manvault with the official Python MCP SDK, as a real client would.

Usage: python_sdk_check.py MANVAULT_BINARY WORKSPACE CASES_DIR

Initialises a session, lists the tools, and calls each listed tool once with the input of
its first success case in conformance/cases/, checking that the SDK accepts the result
(structured content present, no error). Exits non-zero with a list of problems otherwise.
"""

import asyncio
import json
import os
import sys
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
    return problems


def main() -> int:
    binary, workspace, cases_dir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    problems = asyncio.run(check(binary, workspace, cases_dir))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
