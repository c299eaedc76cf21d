"""The additive scoring network, and the four scoring functions side by side (chapter 2)."""

from __future__ import annotations

from typing import Any

from _style import INK, ROLES, edge_role, graph_header, role

NAME = "scoring_functions"
CHAPTER = "02_attention_scores"
TOOL = "dot"

# (name, score, learnable parameters, sizes): attnlib's forms, as chapter 2's table writes them.
FUNCTIONS = [
    ("additive", "<B>w</B><SUB>v</SUB><SUP>⊤</SUP> tanh(<B>W</B><SUB>q</SUB><B>q</B> + <B>W</B><SUB>k</SUB><B>k</B> + <B>b</B>)",
     "<B>W</B><SUB>q</SUB>: <I>d</I><SUB>h</SUB>×<I>d</I><SUB>q</SUB>, <B>W</B><SUB>k</SUB>: <I>d</I><SUB>h</SUB>×<I>d</I><SUB>k</SUB>, <B>b</B>, <B>w</B><SUB>v</SUB>: <I>d</I><SUB>h</SUB>",
     "<I>d</I><SUB>q</SUB> ≠ <I>d</I><SUB>k</SUB> allowed"),
    ("dot", "<B>q</B><SUP>⊤</SUP><B>k</B>", "none", "<I>d</I><SUB>q</SUB> = <I>d</I><SUB>k</SUB>"),
    ("scaled dot", "<B>q</B><SUP>⊤</SUP><B>k</B> / √<I>d</I><SUB>k</SUB>", "none", "<I>d</I><SUB>q</SUB> = <I>d</I><SUB>k</SUB>"),
    ("bilinear", "<B>q</B><SUP>⊤</SUP><B>W</B><B>k</B>", "<B>W</B>: <I>d</I><SUB>q</SUB>×<I>d</I><SUB>k</SUB>",
     "<I>d</I><SUB>q</SUB> ≠ <I>d</I><SUB>k</SUB> allowed"),
]


def values() -> dict[str, Any]:
    return {}  # a pure block diagram: it draws no numbers


def _table() -> str:
    stroke, fill = ROLES["score"]
    head = "".join(f'<TD BGCOLOR="{fill}"><FONT COLOR="{stroke}"><B>{h}</B></FONT></TD>'
                   for h in ("scoring function", "score <I>a</I>(<B>q</B>, <B>k</B>)", "parameters", "sizes"))
    rows = "".join(f"<TR><TD ALIGN=\"LEFT\">{n}</TD><TD>{s}</TD><TD>{p}</TD><TD>{z}</TD></TR>"
                   for n, s, p, z in FUNCTIONS)
    return (f'<<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0" CELLPADDING="6" COLOR="{INK}">'
            f"<TR>{head}</TR>{rows}</TABLE>>")


def render(values: dict[str, Any]) -> str:
    return graph_header("scoring_functions", rankdir="TB", nodesep=0.3, ranksep=0.3) + f"""
  subgraph cluster_additive {{
    label=<<B>the additive scoring network</B>: one hidden layer of size <I>d</I><SUB>h</SUB>>; labeljust=l;
    color="#999999"; style="rounded";
    k [label=<key <B>k</B> ∈ ℝ<SUP><I>d</I><SUB>k</SUB></SUP>>, {role("key")}];
    wk [label=<<B>W</B><SUB>k</SUB><B>k</B>>, {role("op")}];
    q [label=<query <B>q</B> ∈ ℝ<SUP><I>d</I><SUB>q</SUB></SUP>>, {role("query")}];
    wq [label=<<B>W</B><SUB>q</SUB><B>q</B>>, {role("op")}];
    plus [label=<+ <B>b</B>>, shape=circle, {role("op")}, margin="0.02"];
    tanh [label=<tanh>, {role("op")}];
    wv [label=<<B>w</B><SUB>v</SUB><SUP>⊤</SUP> ·>, {role("op")}];
    a [label=<score<BR/><I>a</I>(<B>q</B>, <B>k</B>) ∈ ℝ>, {role("score")}];
    {{ rank=same; k; wk; }}
    {{ rank=same; q; wq; plus; tanh; wv; a; }}
    k -> wk [label=<<I>d</I><SUB>k</SUB>>, {edge_role("key")}];
    q -> wq [label=<<I>d</I><SUB>q</SUB>>, {edge_role("query")}];
    wk -> plus [label=<  <I>d</I><SUB>h</SUB>>];
    wq -> plus [label=<<I>d</I><SUB>h</SUB>>];
    plus -> tanh [label=<<I>d</I><SUB>h</SUB>>];
    tanh -> wv [label=<<I>d</I><SUB>h</SUB>>];
    wv -> a [label="1"];
  }}
  subgraph cluster_four {{
    label=<<B>four scoring functions, one interface</B>: queries (B, L, E<SUB>q</SUB>) and keys (B, S, E<SUB>k</SUB>) in, scores (B, L, S) out>;
    labeljust=l; color="#999999"; style="rounded";
    table [shape=plain, style="", label={_table()}];
  }}
  wq -> table [style=invis];
}}
"""
