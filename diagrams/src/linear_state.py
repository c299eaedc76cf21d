"""What a decoder keeps between tokens (chapter 9): a growing key/value cache for softmax
attention, one fixed state for linear attention (attnlib.blocks.linear_attention)."""

from __future__ import annotations

from typing import Any

from _style import ROLES, graph_header

NAME = "linear_state"
CHAPTER = "09_attention_in_language_models"
TOOL = "dot"
STEPS = 4


def values() -> dict[str, Any]:
    return {"steps": STEPS}  # a block diagram: the number of tokens drawn


def _cache(t: int) -> str:
    kstroke, kfill = ROLES["key"]
    vstroke, vfill = ROLES["value"]
    rows = "".join(
        f'<TR><TD BGCOLOR="{kfill}" COLOR="{kstroke}"><FONT COLOR="{kstroke}">k<SUB>{j}</SUB>'
        f'</FONT></TD><TD BGCOLOR="{vfill}" COLOR="{vstroke}"><FONT COLOR="{vstroke}">'
        f'v<SUB>{j}</SUB></FONT></TD></TR>' for j in range(1, t + 1))
    return (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="1" CELLPADDING="3">{rows}'
            f'</TABLE>>')


def render(values: dict[str, Any]) -> str:
    n = values["steps"]
    sstroke, sfill = ROLES["score"]
    lines = []
    for t in range(1, n + 1):
        lines.append(f'  h{t} [shape=plaintext, style="", label=<<B>after token {t}</B>>];')
        lines.append(f'  c{t} [shape=plain, style="", label={_cache(t)}];')
        lines.append(f'  s{t} [label=<<B>S</B><SUB>{t}</SUB> = <B>S</B><SUB>{t - 1}</SUB> + '
                     f'φ(<B>k</B><SUB>{t}</SUB>)<B>v</B><SUB>{t}</SUB><SUP>⊤</SUP><BR/>'
                     f'<B>z</B><SUB>{t}</SUB> = <B>z</B><SUB>{t - 1}</SUB> + '
                     f'φ(<B>k</B><SUB>{t}</SUB>)>, color="{sstroke}", fillcolor="{sfill}", '
                     f'fontcolor="{sstroke}", penwidth="1.6", fontsize=11];')
        lines.append(f'  h{t} -> c{t} -> s{t} [style=invis];')
        if t > 1:
            lines.append(f'  c{t - 1} -> c{t} [color="#888888", style=dashed, '
                         f'label=" grows", fontcolor="#555555"];')
            lines.append(f'  s{t - 1} -> s{t} [color="{sstroke}", label=" in place", '
                         f'fontcolor="{sstroke}"];')
    ranks = "\n".join(f"  {{ rank=same; {' '.join(f'{x}{t};' for t in range(1, n + 1))} }}"
                      for x in ("h", "c", "s"))
    rows = (f'  cl [shape=plaintext, style="", label=<softmax attention:<BR/>the key/value '
            f'cache>];\n'
            f'  sl [shape=plaintext, style="", label=<linear attention:<BR/>the state, '
            f'E × (E<SUB>v</SUB> + 1)<BR/>numbers per head>, fontcolor="{sstroke}"];\n'
            f'  hl [shape=plaintext, style="", label=""];\n'
            f'  hl -> cl -> sl [style=invis];\n'
            f'  {{ rank=same; hl; h1; }}\n  {{ rank=same; cl; c1; }}\n  {{ rank=same; sl; s1; }}\n'
            f'  hl -> h1 [style=invis];\n  cl -> c1 [style=invis];\n  sl -> s1 [style=invis];')
    return graph_header("linear_state", rankdir="TB", nodesep=0.45, ranksep=0.3) + f"""
  label=<Query i reads all i cached keys and values (softmax), or φ(<B>q</B><SUB>i</SUB>)<SUP>⊤</SUP><B>S</B><SUB>i</SUB> / φ(<B>q</B><SUB>i</SUB>)<SUP>⊤</SUP><B>z</B><SUB>i</SUB> (linear, φ = elu + 1)>;
  labelloc=b; fontsize=12;
{chr(10).join(lines)}
{rows}
{ranks}
}}
"""
