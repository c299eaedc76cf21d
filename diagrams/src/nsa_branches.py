"""Native Sparse Attention's three branches and their gates (chapter 11; Yuan et al. 2025,
section 3): compressed blocks, selected blocks and a sliding window, each an attention of the
same query, mixed by gates computed from the input. Not implemented in attnlib: the chapter
describes it in prose."""

from __future__ import annotations

from typing import Any

from _style import ROLES, edge_role, graph_header, role

NAME = "nsa_branches"
CHAPTER = "11_sparse_and_stable_attention"
TOOL = "dot"


def values() -> dict[str, Any]:
    return {"branches": ["cmp", "slc", "win"]}


def render(values: dict[str, Any]) -> str:
    del values
    ostroke = ROLES["output"][0]
    lines = [
        f'  ctx [label=<keys and values of the tokens before t<BR/>'
        f'<B>k</B><SUB>:t</SUB>, <B>v</B><SUB>:t</SUB>>, {role("key")}];',
        f'  q [label=<query <B>q</B><SUB>t</SUB>>, {role("query")}];',
        f'  cmp [label=<compression: each block of tokens<BR/>'
        f'turned into one key and one value (a small MLP)>, {role("key")}];',
        f'  slc [label=<selection: the top-n blocks,<BR/>'
        f'ranked by the compressed branch\'s scores,<BR/>their tokens kept as they are>, '
        f'{role("key")}];',
        f'  win [label=<sliding window:<BR/>the last w tokens>, {role("key")}];',
        f'  a_cmp [label=<attention>, {role("score")}];',
        f'  a_slc [label=<attention>, {role("score")}];',
        f'  a_win [label=<attention>, {role("score")}];',
        f'  gate [label=<gates g<SUP>cmp</SUP>, g<SUP>slc</SUP>, g<SUP>win</SUP> in (0, 1)<BR/>'
        f'(an MLP and a sigmoid of the input)>, {role("mask")}];',
        f'  o [label=<<B>o</B><SUB>t</SUB> = g<SUP>cmp</SUP> · o<SUP>cmp</SUP> + '
        f'g<SUP>slc</SUP> · o<SUP>slc</SUP> + g<SUP>win</SUP> · o<SUP>win</SUP>>, '
        f'{role("output")}];',
        f'  ctx -> cmp [{edge_role("key")}];',
        f'  ctx -> slc [{edge_role("key")}];',
        f'  ctx -> win [{edge_role("key")}];',
        f'  cmp -> slc [{edge_role("score")}, style=dashed, label=" block scores"];',
        f'  cmp -> a_cmp [{edge_role("key")}];',
        f'  slc -> a_slc [{edge_role("key")}];',
        f'  win -> a_win [{edge_role("key")}];',
        f'  q -> a_cmp [{edge_role("query")}];',
        f'  q -> a_slc [{edge_role("query")}];',
        f'  q -> a_win [{edge_role("query")}];',
        f'  a_cmp -> o [color="{ostroke}"];',
        f'  a_slc -> o [color="{ostroke}"];',
        f'  a_win -> o [color="{ostroke}"];',
        f'  gate -> o [{edge_role("mask")}];',
        '  { rank=same; ctx; q; }',
        '  { rank=same; cmp; slc; win; }',
        '  { rank=same; a_cmp; a_slc; a_win; gate; }',
        '  slc -> win [style=invis];',
        '  a_cmp -> a_slc -> a_win -> gate [style=invis];',
    ]
    return graph_header("nsa_branches", rankdir="TB", nodesep=0.35, ranksep=0.45) + "\n".join(
        lines) + "\n}\n"
