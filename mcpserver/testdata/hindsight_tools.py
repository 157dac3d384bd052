"""Writes hindsight_tools.json: the MCP tools of Hindsight 1.1.0, read from
hindsight_api/mcp_tools.py of hindsight-api-slim==1.1.0 (pip install it into
a virtualenv outside the repository), for TestToolsMatchHindsight.

    python3 hindsight_tools.py VENV/lib/python3.*/site-packages/hindsight_api/mcp_tools.py > hindsight_tools.json

For each tool and mode (single: bank from the URL, no bank_id; multi:
optional bank_id) it records the argument names, which are required, and
the literal defaults.
"""
import ast
import json
import sys

tree = ast.parse(open(sys.argv[1]).read())
tools = {}
for node in ast.walk(tree):
    if not isinstance(node, ast.AsyncFunctionDef) or not node.decorator_list:
        continue
    if "mcp.tool" not in ast.unparse(node.decorator_list[0]):
        continue
    a = node.args
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    args = {}
    for arg, d in zip(a.args, defaults):
        entry = {"required": d is None}
        if d is not None:
            try:
                v = ast.literal_eval(d)
            except ValueError:
                v = None  # a constant such as Budget.LOW
            if v is not None:
                entry["default"] = v
        args[arg.arg] = entry
    multi = "bank_id" in args and node.name != "create_bank"
    mode = "multi" if multi or node.name in ("list_banks", "create_bank", "get_bank_stats") else "single"
    tools.setdefault(node.name, {})[mode] = args
json.dump(tools, sys.stdout, indent=1, sort_keys=True)
print()
