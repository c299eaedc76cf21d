"""Scaled dot-product attention as a block, with the shapes of every tensor (chapter 3)."""

from __future__ import annotations

from typing import Any

from _style import edge_role, graph_header, role

NAME = "scaled_dot_product"
CHAPTER = "03_scaled_dot_product"
TOOL = "dot"


def values() -> dict[str, Any]:
    return {}  # a pure block diagram: it draws no numbers


def render(values: dict[str, Any]) -> str:
    return graph_header("scaled_dot_product", rankdir="TB", nodesep=0.35, ranksep=0.32) + f"""
  Q [label=<query <B>Q</B><BR/>(B, H, L, E)>, {role("query")}];
  K [label=<key <B>K</B><BR/>(B, H, S, E)>, {role("key")}];
  V [label=<value <B>V</B><BR/>(B, H, S, Ev)>, {role("value")}];
  mm1 [group=main, label=<MatMul  <B>QK</B><SUP>⊤</SUP>>, {role("op")}];
  scale [group=main, label=<Scale  × 1/√E<BR/><FONT POINT-SIZE="10">(or <I>scale</I>)</FONT>>, {role("op")}];
  mask [group=main, label=<Mask (optional)<BR/><FONT POINT-SIZE="10">False → −∞  (bool)<BR/>or + float mask</FONT>>, {role("op")}];
  M [label=<attn_mask, broadcastable to (B, H, L, S)<BR/><FONT POINT-SIZE="10">True = may attend; or is_causal: tril(L, S)</FONT>>, {role("mask")}];
  sm [group=main, label=<Softmax over S<BR/><FONT POINT-SIZE="10">a fully masked row → zeros</FONT>>, {role("op")}];
  drop [group=main, label=<Dropout (training only)>, style="rounded,dashed", color="#777777", fontcolor="#444444"];
  A [group=main, label=<weights <B>A</B>  (B, H, L, S)<BR/><FONT POINT-SIZE="10">returned with need_weights=True</FONT>>, {role("score")}];
  mm2 [group=main, label=<MatMul  <B>AV</B>>, {role("op")}];
  O [group=main, label=<output<BR/>(B, H, L, Ev)>, {role("output")}];

  {{ rank=same; Q; K; V; }}
  {{ rank=same; mask; M; }}
  Q -> mm1 [{edge_role("query")}];
  K -> mm1 [label="  transposed: (B, H, E, S)", {edge_role("key")}];
  mm1 -> scale [label="  scores (B, H, L, S)"];
  scale -> mask [label="  (B, H, L, S)"];
  M -> mask [{edge_role("mask")}];
  mask -> sm [label="  (B, H, L, S)"];
  sm -> drop -> A;
  A -> mm2;
  V -> mm2 [{edge_role("value")}];
  mm2 -> O;
}}
"""
