#!/usr/bin/env python3
"""Prints the public API of a module, one declaration per line, from `swift-api-digester -dump-sdk` JSON.

Each line is a declaration's path (its enclosing types), kind and printed signature, with the attributes that change
what a caller may do (`throws` types, `async`, static, mutating, deprecated, SPI). The lines are sorted, so any
change to the public surface, an addition included, shows as a one-line diff (scripts/check-api.sh).
"""
import json
import sys

# Nodes that name a type used by a declaration, not declarations themselves.
TYPE_REFERENCES = ("TypeNominal", "TypeNameAlias", "TypeFunc")


def signature(node):
    """The parts of a declaration a caller depends on, as text."""
    parts = [node.get("declKind", node.get("kind", "?")), node.get("printedName", node.get("name", "?"))]
    children = node.get("children") or []
    # For functions, vars and subscripts the first child is the result type, the others the parameter types.
    types = [c.get("printedName", "") for c in children if c.get("kind", "") in TYPE_REFERENCES]
    if types:
        parts.append("-> " + types[0])
        if len(types) > 1:
            parts.append("(" + ", ".join(types[1:]) + ")")
    if node.get("genericSig"):
        parts.append(node["genericSig"])
    for flag in ("static", "throwing", "isLet", "hasSetter"):
        if node.get(flag):
            parts.append(flag)
    if node.get("funcSelfKind") == "Mutating":
        parts.append("mutating")
    attributes = node.get("declAttributes") or []
    kept = [a for a in attributes if a in ("Available", "SPIAccessControl", "DiscardableResult", "Frozen", "Inlinable")]
    if kept:
        parts.append("@" + ",".join(sorted(kept)))
    if node.get("spi_group_names"):
        parts.append("spi" + str(node["spi_group_names"]))
    for conformance in node.get("conformances") or []:
        parts.append(": " + conformance.get("printedName", conformance.get("name", "")))
    # The mangled name pins what the readable part leaves out (async, typed throws, exact parameter types).
    if node.get("mangledName"):
        parts.append("[" + node["mangledName"] + "]")
    return " ".join(parts)


def walk(node, path, lines):
    kind = node.get("kind", "")
    if kind == "Import":
        return
    if kind != "Root":
        lines.append(" / ".join(path + [signature(node)]))
    name = node.get("printedName") or node.get("name")
    below = path if kind == "Root" else path + [name]
    for child in node.get("children") or []:
        if child.get("kind", "") in TYPE_REFERENCES:
            continue
        walk(child, below, lines)


def main():
    dump = json.load(open(sys.argv[1]))
    lines = []
    walk(dump["ABIRoot"], [], lines)
    for line in sorted(set(lines)):
        print(line)


if __name__ == "__main__":
    main()
