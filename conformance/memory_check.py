"""The memory tools end to end, driven by the official Python MCP SDK as an agent would
use them, against a fresh copy of the example workspace whose memory policy the server
applies when its store opens.

Usage: memory_check.py MANVAULT_BINARY WORKSPACE

apply a policy (validate_only, then applied on top of the one in force with
expected_version) -> upsert claims (one of them twice; a secret one refused) ->
activate and page through the active context with its cursor (pages disjoint, together
the whole ranking) -> feedback that changes the ranking -> boundary_validate redacting an
email -> search that never shows the secret, and shows pii only redacted -> state.

Exits non-zero with a list of problems otherwise.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

POLICY = """version: '0.2'
scopes:
  session:   { ttl: '7d' }
  project:   { ttl: '120d', max_tokens: 50000 }
  principle: { ttl: 'inf' }
boundary_classes:
  public:   { allow: ['*'] }
  internal: { allow: ['answer:task', 'tool:*'] }
  pii:      { allow: ['tool:contact-lookup'], redact: ['email', 'phone'], escalation: 'human_review' }
  secret:   { allow: [], redact: ['api_key'], escalation: 'deny' }
redact_patterns:
  api_key: '\\bsk-[a-z0-9]{16,}'
retrieval:
  hybrid: { alpha: 0.65, k_txt: 48, k_vec: 96, k_final: 12 }
"""

AT = {"at": "2026-11-20T09:00:00Z"}


class Problems(Exception):
    """A step went wrong; the check cannot go on."""


async def run(binary: str, workspace: str) -> list:
    problems = []
    env = dict(os.environ, WORKSPACE_ROOT=workspace, LOG_LEVEL="error")
    params = StdioServerParameters(command=binary, args=["serve"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def call(name, arguments):
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    raise Problems(f"{name} failed: {result.content[0].text}")
                if result.structured_content is None:
                    raise Problems(f"{name} gave no structuredContent")
                return result.structured_content

            async def refused(name, arguments, code):
                result = await session.call_tool(name, arguments)
                body = json.loads(result.content[0].text) if result.is_error else {}
                if body.get("code") != code:
                    problems.append(f"{name} should fail with {code}: {result.content[0].text}")
                return body

            def check(condition, message):
                if not condition:
                    problems.append(message)

            # Policy: the example's is in force; check a new one, then apply it on top.
            in_force = (await call("pce_memory_state", {}))["policy_version"]
            check(in_force == "0.1.1", f"the example policy should be in force: {in_force}")
            checked = await call("pce_memory_policy_apply", {"yaml": POLICY, "validate_only": True})
            check(checked["mode"] == "validate_only" and checked["policy_version"] == in_force, f"validate_only: {checked}")
            applied = await call("pce_memory_policy_apply", {"yaml": POLICY, "expected_version": in_force, "approver": "sdk-check"})
            check(applied["version"] == "0.2.2", f"applied: {applied}")
            await refused("pce_memory_policy_apply", {"yaml": POLICY, "expected_version": in_force}, "CONFLICT")

            # Claims.
            ids = {}
            for name, text in [
                ("alpha", "Webhook signatures are verified with the endpoint secret (alpha)"),
                ("beta", "Webhook signatures are verified with the endpoint secret (beta)"),
                ("retry", "Webhook deliveries are retried with exponential backoff"),
                ("cancel", "解約 API は非同期で、完了は webhook で通知される"),
                ("naming", "Webhook handlers are named after the event they handle"),
            ]:
                ids[name] = (await call("pce_memory_upsert", {"text": text, "provenance": AT}))["id"]
            again = await call("pce_memory_upsert", {"text": "  Webhook signatures are verified with the endpoint secret (alpha) ", "provenance": AT})
            check(again["id"] == ids["alpha"] and again["is_new"] is False, f"idempotent upsert: {again}")
            contact = await call("pce_memory_upsert", {"text": "Webhook failures are escalated to hanako@example.com", "boundary_class": "pii", "provenance": AT})
            await refused("pce_memory_upsert", {"text": "webhook signing key sk-0123456789abcdefghij", "provenance": AT}, "BOUNDARY_DENIED")
            await refused("pce_memory_upsert", {"text": "the webhook secret lives in vault path kv/billing", "boundary_class": "secret", "provenance": AT}, "BOUNDARY_DENIED")

            # Activate and page through the context.
            tags = ["answer:task"]
            first = await call("pce_memory_activate", {"q": "webhook", "allow": tags, "top_k": 2})
            total = first["claims_count"]
            seen = [item["claim"]["id"] for item in first["claims"]]
            page = first
            while page.get("next_cursor"):
                page = await call("pce_memory_activate", {"q": "webhook", "allow": tags, "top_k": 2, "cursor": page["next_cursor"]})
                check(page["active_context_id"] == first["active_context_id"], "every page is of one active context")
                seen += [item["claim"]["id"] for item in page["claims"]]
            check(len(seen) == len(set(seen)) == total, f"pages repeat or miss claims: {seen} of {total}")
            whole = await call("pce_memory_activate", {"q": "webhook", "allow": tags, "top_k": 50})
            check([item["claim"]["id"] for item in whole["claims"]] == seen, "the pages together are the ranking")
            check(contact["id"] not in seen, "pii must not reach answer:task")

            # Feedback changes the ranking of two otherwise equal claims.
            async def order():
                found = await call("pce_memory_search", {"query": "webhook signatures endpoint secret", "allow": tags, "top_k": 2})
                return [item["claim"]["id"] for item in found["items"]]

            before = await order()
            check(set(before) == {ids["alpha"], ids["beta"]}, f"the two signature claims lead: {before}")
            rated = await call("pce_memory_feedback", {"claim_id": before[0], "signal": "harmful"})
            check(rated["applied"] is True, f"feedback: {rated}")
            after = await order()
            check(after == list(reversed(before)), f"harmful feedback should swap them: {before} -> {after}")

            # Redact before send.
            verdict = await call("pce_memory_boundary_validate", {"payload": "Mail hanako@example.com the incident", "allow": tags})
            check(verdict["allowed"] is True and verdict["redacted"] == "Mail [REDACTED:email] the incident", f"validate: {verdict}")

            # The secret never appears; pii only redacted.
            found = await call("pce_memory_search", {"query": "webhook secret signing key vault", "allow": ["tool:contact-lookup"], "top_k": 50})
            texts = " ".join(item["claim"]["text"] for item in found["items"])
            check("sk-0123" not in texts and "kv/billing" not in texts, "a secret reached an answer")
            check("hanako@" not in texts and "[REDACTED:email]" in texts, f"pii should come redacted: {texts}")

            state = await call("pce_memory_state", {})
            check(state["claims"]["total"] == 6 and state["claims"]["by_boundary_class"]["secret"] == 0, f"state: {state['claims']}")
    if not problems:
        print("python sdk: memory workflow ok")
    return problems


def main() -> int:
    binary, workspace = sys.argv[1], sys.argv[2]
    try:
        problems = asyncio.run(run(binary, workspace))
    except Problems as problem:
        problems = [str(problem)]
    for problem in problems:
        print(f"memory check: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
