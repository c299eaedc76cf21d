"""Attention pooling, as source note 000 draws it: score -> softmax -> weighted sum (chapter 2)."""

from __future__ import annotations

from typing import Any

from _style import edge_role, graph_header, role

NAME = "attention_pooling"
CHAPTER = "02_attention_scores"
TOOL = "dot"


def values() -> dict[str, Any]:
    return {}  # a pure block diagram: it draws no numbers


def render(values: dict[str, Any]) -> str:
    return graph_header("attention_pooling", rankdir="LR", nodesep=0.25, ranksep=0.3) + f"""
  q [label=<query <B>q</B>>, {role("query")}];
  k [label=<keys<BR/><B>k</B><SUB>1</SUB>, …, <B>k</B><SUB><I>S</I></SUB>>, {role("key")}];
  v [label=<values<BR/><B>v</B><SUB>1</SUB>, …, <B>v</B><SUB><I>S</I></SUB>>, {role("value")}];
  a [label=<scoring function <I>a</I><BR/>注意力评分函数>, {role("op")}];
  s [label=<attention scores<BR/><I>a</I>(<B>q</B>, <B>k</B><SUB>j</SUB>), <I>j</I> = 1…<I>S</I><BR/>注意力分数>, {role("score")}];
  sm [label=<softmax<BR/><FONT POINT-SIZE="10">only normalises</FONT>>, {role("op")}];
  w [label=<attention weights<BR/>α(<B>q</B>, <B>k</B><SUB>j</SUB>) ≥ 0, Σ<SUB>j</SUB> α = 1<BR/>注意力权重>, {role("score")}];
  sum [label=<weighted sum<BR/>Σ<SUB>j</SUB> α(<B>q</B>, <B>k</B><SUB>j</SUB>) <B>v</B><SUB>j</SUB>>, {role("op")}];
  out [label=<output<BR/><I>f</I>(<B>q</B>)>, {role("output")}];

  {{ rank=same; q; k; }}
  q -> a [{edge_role("query")}];
  k -> a [{edge_role("key")}];
  a -> s -> sm -> w -> sum -> out;
  v -> sum [{edge_role("value")}];
  {{ rank=same; v; w; }}
}}
"""
