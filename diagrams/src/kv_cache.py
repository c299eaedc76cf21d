"""The key/value cache at one decoding step of chapter 8: one new token, one query, all keys."""

from __future__ import annotations

from typing import Any

from _style import INK, ROLES, edge_role, graph_header, role

NAME = "kv_cache"
CHAPTER = "08_efficient_attention"
TOOL = "dot"

# Source note 002's walk-through: "<s> i love" is the prefix, the step reads "love".
PREFIX = ["&lt;s&gt;", "i"]
NEWEST = "love"


def values() -> dict[str, Any]:
    return {}  # a block diagram: it draws no numbers


def _cache(kind: str, letter: str) -> str:
    stroke, fill = ROLES[kind]
    rows = "".join(
        f'<TR><TD BGCOLOR="{fill}" BORDER="1" COLOR="{stroke}"><FONT COLOR="{stroke}"><B>{letter}</B><SUB>{j}</SUB>  ({tok})</FONT></TD>'
        f'<TD ALIGN="LEFT"><FONT POINT-SIZE="10" COLOR="#555555">cached at step {j}</FONT></TD></TR>'
        for j, tok in enumerate(PREFIX))
    t = len(PREFIX)
    rows += (f'<TR><TD PORT="new" BGCOLOR="{fill}" BORDER="3" COLOR="{stroke}"><FONT COLOR="{stroke}"><B>{letter}</B><SUB>{t}</SUB>  ({NEWEST})</FONT></TD>'
             f'<TD ALIGN="LEFT"><FONT POINT-SIZE="10" COLOR="{INK}"><B>appended now</B></FONT></TD></TR>')
    title = "key" if kind == "key" else "value"
    return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="4">'
            f'<TR><TD COLSPAN="2"><FONT COLOR="{stroke}"><B>self-attention {title} cache</B></FONT><BR/>'
            f'<FONT POINT-SIZE="10">(B, H, t + 1, E) after this step</FONT></TD></TR>{rows}</TABLE>>')


def _weights() -> str:
    stroke, fill = ROLES["score"]
    cells = "".join(f'<TD BGCOLOR="{fill}" BORDER="1" COLOR="{stroke}"><FONT COLOR="{stroke}">α<SUB>t,{j}</SUB></FONT></TD>'
                    for j in range(len(PREFIX) + 1))
    return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="5">'
            f'<TR><TD COLSPAN="{len(PREFIX) + 1}">weights of the one query  (B, H, 1, t + 1)<BR/>'
            f'<FONT POINT-SIZE="10">softmax of <B>q</B><SUB>t</SUB><B>K</B><SUP>⊤</SUP>/√E; no mask: every cached key is in the past</FONT></TD></TR>'
            f"<TR>{cells}</TR></TABLE>>")


def render(values: dict[str, Any]) -> str:
    t = len(PREFIX)
    return graph_header("kv_cache", rankdir="TB", nodesep=0.35, ranksep=0.3) + f"""
  label=<<B>Decoding step t = {t}</B> in one decoder layer: the prefix is {" ".join(PREFIX)} {NEWEST}; only the newest token goes in>;
  labelloc=t; fontsize=13;
  tok [label=<newest token <B>{NEWEST}</B> at position t = {t}<BR/><FONT POINT-SIZE="10">(B, 1, D): one token, not the whole prefix</FONT>>, {role("output")}];
  qp [label=<<B>q</B><SUB>t</SUB> = q_proj(·)  (B, H, 1, E)>, {role("query")}];
  kp [label=<<B>k</B><SUB>t</SUB> = k_proj(·)  (B, H, 1, E)>, {role("key")}];
  vp [label=<<B>v</B><SUB>t</SUB> = v_proj(·)  (B, H, 1, E)>, {role("value")}];
  kc [shape=plain, style="", label={_cache("key", "k")}];
  vc [shape=plain, style="", label={_cache("value", "v")}];
  w [shape=plain, style="", label={_weights()}];
  o [label=<Σ<SUB>j</SUB> α<SUB>t,j</SUB> <B>v</B><SUB>j</SUB>  (B, H, 1, E)<BR/><FONT POINT-SIZE="10">cost O(tD) instead of O(t²D) for the whole prefix</FONT>>, {role("op")}];
  cross [label=<cross-attention: the one query against the encoder's keys and values<BR/><FONT POINT-SIZE="10">(B, H, S, E) each, computed once by init_cache, read at every step</FONT>>, {role("op")}];
  nxt [label=<feed-forward, the next layers, the output layer → the next word <B>machine</B><BR/><FONT POINT-SIZE="10">which becomes the newest token of step t + 1</FONT>>, {role("output")}];

  {{ rank=same; qp; kp; vp; }}
  {{ rank=same; kc; vc; }}
  tok -> qp [{edge_role("query")}];
  tok -> kp [{edge_role("key")}];
  tok -> vp [{edge_role("value")}];
  kp -> kc:new [label=" append", {edge_role("key")}];
  vp -> vc:new [label=" append", {edge_role("value")}];
  qp -> w [label="  query", {edge_role("query")}];
  kc -> w [label="  all t + 1 keys", {edge_role("key")}];
  w -> o;
  vc -> o [label="  all t + 1 values", {edge_role("value")}];
  o -> cross -> nxt;
}}
"""
