"""Multi-head attention: projections, split_heads, attention per head, merge_heads, out_proj (chapter 5)."""

from __future__ import annotations

from typing import Any

from _style import edge_role, graph_header, role

NAME = "multihead_attention"
CHAPTER = "05_multihead_self_attention"
TOOL = "dot"


def values() -> dict[str, Any]:
    return {}  # a pure block diagram: it draws no numbers


def render(values: dict[str, Any]) -> str:
    proj = '<FONT POINT-SIZE="10">nn.Linear(D, D): all H heads at once</FONT>'
    split = '<FONT POINT-SIZE="10">view (B, ·, H, E), transpose</FONT>'
    return graph_header("multihead_attention", rankdir="TB", nodesep=0.45, ranksep=0.32) + f"""
  q [label=<query<BR/>(B, L, D)>, {role("query")}];
  k [label=<key<BR/>(B, S, D)>, {role("key")}];
  v [label=<value<BR/>(B, S, D)>, {role("value")}];
  qp [label=<q_proj: <I>Q</I><B>W</B><SUP>Q</SUP><BR/>{proj}>, {role("query")}, fillcolor="#ffffff"];
  kp [label=<k_proj: <I>K</I><B>W</B><SUP>K</SUP><BR/>{proj}>, {role("key")}, fillcolor="#ffffff"];
  vp [label=<v_proj: <I>V</I><B>W</B><SUP>V</SUP><BR/>{proj}>, {role("value")}, fillcolor="#ffffff"];
  qs [label=<split_heads<BR/>{split}>, {role("op")}];
  ks [label=<split_heads<BR/>{split}>, {role("op")}];
  vs [label=<split_heads<BR/>{split}>, {role("op")}];
  att [shape=box3d, style="filled", margin="0.25,0.12", label=<scaled dot-product attention, each head on its own slice<BR/>head<SUB><I>i</I></SUB> = Attention(<I>Q</I><B>W</B><SUB><I>i</I></SUB><SUP>Q</SUP>, <I>K</I><B>W</B><SUB><I>i</I></SUB><SUP>K</SUP>, <I>V</I><B>W</B><SUB><I>i</I></SUB><SUP>V</SUP>),  <I>i</I> = 1 … H<BR/><FONT POINT-SIZE="10">all H heads in one call, E = D / H</FONT>>, {role("op")}];
  mask [label=<mask, broadcastable to (B, H, L, S)<BR/><FONT POINT-SIZE="10">True = may attend</FONT>>, {role("mask")}];
  w [label=<weights (B, H, L, S)<BR/><FONT POINT-SIZE="10">need_weights=True</FONT>>, {role("score")}];
  merge [label=<merge_heads = Concat(head<SUB>1</SUB>, …, head<SUB>H</SUB>)<BR/><FONT POINT-SIZE="10">transpose (B, L, H, E), reshape</FONT>>, {role("op")}];
  op [label=<out_proj: · <B>W</B><SUP>O</SUP><BR/><FONT POINT-SIZE="10">nn.Linear(H·E, D) mixes the heads</FONT>>, {role("op")}];
  out [label=<output<BR/>(B, L, D)>, {role("output")}];

  {{ rank=same; q; k; v; }}
  {{ rank=same; att; mask; }}
  q -> qp [{edge_role("query")}];
  k -> kp [{edge_role("key")}];
  v -> vp [{edge_role("value")}];
  qp -> qs [label="  (B, L, D)", {edge_role("query")}];
  kp -> ks [label="  (B, S, D)", {edge_role("key")}];
  vp -> vs [label="  (B, S, D)", {edge_role("value")}];
  qs -> att [label="  Q (B, H, L, E)", {edge_role("query")}];
  ks -> att [label="  K (B, H, S, E)", {edge_role("key")}];
  vs -> att [label="  V (B, H, S, E)", {edge_role("value")}];
  mask -> att [{edge_role("mask")}];
  att -> merge [label="  heads (B, H, L, E)"];
  att -> w [{edge_role("score")}];
  merge -> op [label="  (B, L, H·E) = (B, L, D)"];
  op -> out;
}}
"""
