"""One step of the (gated) delta rule (chapter 10), as attnlib.blocks.delta_rule._delta_step
computes it: decay the memory by alpha, read what it holds under the key, scale the error by
beta and write it back along the key, then read the output with the query."""

from __future__ import annotations

from typing import Any

from _style import ROLES, edge_role, graph_header, role

NAME = "delta_rule"
CHAPTER = "10_modern_attention"
TOOL = "dot"


def values() -> dict[str, Any]:
    # A block diagram: the order of the operations in _delta_step, which it draws.
    return {"steps": ["decay", "read", "error", "write", "output"]}


def render(values: dict[str, Any]) -> str:
    assert values["steps"] == ["decay", "read", "error", "write", "output"]
    sstroke = ROLES["score"][0]
    k, v, q, M = "<B>k</B><SUB>t</SUB>", "<B>v</B><SUB>t</SUB>", "<B>q</B><SUB>t</SUB>", "M"
    lines = [
        f'  alpha [label=<α<SUB>t</SUB> ∈ (0, 1]<BR/>(Gated DeltaNet;<BR/>1 in DeltaNet)>, '
        f'{role("op")}];',
        f'  prev [label=<memory {M}<SUB>t−1</SUB><BR/>E × E<SUB>v</SUB> numbers per head>, '
        f'{role("score")}];',
        f'  decayed [label=<1. forget: α<SUB>t</SUB>{M}<SUB>t−1</SUB><BR/>every entry scaled by '
        f'α<SUB>t</SUB>>, {role("score")}];',
        f'  k [label=<key {k}<BR/>(unit length)>, {role("key")}];',
        f'  v [label=<value {v}>, {role("value")}];',
        f'  read [label=<2. read: (α<SUB>t</SUB>{M}<SUB>t−1</SUB>)<SUP>⊤</SUP>{k}<BR/>what the '
        f'memory holds under {k}>, {role("value")}];',
        f'  beta [label=<β<SUB>t</SUB> ∈ [0, 1]<BR/>writing strength>, {role("op")}];',
        f'  err [label=<3. error: <B>e</B><SUB>t</SUB> = β<SUB>t</SUB>({v} − read)<BR/>'
        f'only the difference>, {role("value")}];',
        f'  write [label=<4. write along {k}:<BR/>{M}<SUB>t</SUB> = α<SUB>t</SUB>{M}<SUB>t−1</SUB> + '
        f'{k}<B>e</B><SUB>t</SUB><SUP>⊤</SUP>>, {role("score")}];',
        f'  q [label=<query {q}>, {role("query")}];',
        f'  out [label=<5. output <B>o</B><SUB>t</SUB> = {M}<SUB>t</SUB><SUP>⊤</SUP>{q}>, '
        f'{role("output")}];',
        f'  prev -> decayed [color="{sstroke}"];',
        '  alpha -> decayed;',
        f'  decayed -> read [color="{sstroke}"];',
        f'  k -> read [{edge_role("key")}];',
        f'  read -> err [{edge_role("value")}];',
        f'  v -> err [{edge_role("value")}];',
        '  beta -> err;',
        f'  err -> write [{edge_role("value")}];',
        f'  k -> write [{edge_role("key")}, label=" outer product"];',
        f'  decayed -> write [color="{sstroke}"];',
        f'  write -> out [color="{sstroke}"];',
        f'  q -> out [{edge_role("query")}];',
        f'  write -> prev [color="{sstroke}", style=dashed, constraint=false, '
        f'label=" the next token\'s M"];',
        '  { rank=same; alpha; prev; k; v; }',
        '  { rank=same; beta; read; }',
        '  { rank=same; write; q; }',
    ]
    return graph_header("delta_rule", rankdir="TB", nodesep=0.35, ranksep=0.4) + "\n".join(
        lines) + "\n}\n"
