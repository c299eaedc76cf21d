"""One round of speculative sampling (chapter 9): the draft proposes k tokens, one pass of the
model checks them, the first refusal is replaced from the residual (attnlib.train.speculative).
"""

from __future__ import annotations

from typing import Any

from _style import ROLES, edge_role, graph_header, role

NAME = "speculative"
CHAPTER = "09_attention_in_language_models"
TOOL = "dot"


def values() -> dict[str, Any]:
    # The round drawn: k = 4 proposals, the third refused.
    return {"k": 4, "refused": 3}


def render(values: dict[str, Any]) -> str:
    k, refused = values["k"], values["refused"]
    kstroke, _ = ROLES["mask"]
    lines = []
    for i in range(1, k + 1):
        lines.append(f'  d{i} [label=<draft samples x<SUB>{i}</SUB> ~ q<SUB>{i}</SUB>>, '
                     f'{role("key")}];')
        if i < refused:
            verdict = (f'<B>kept</B>: u<SUB>{i}</SUB> &lt; p<SUB>{i}</SUB>(x<SUB>{i}</SUB>) / '
                       f'q<SUB>{i}</SUB>(x<SUB>{i}</SUB>)')
            lines.append(f'  v{i} [label=<{verdict}<BR/><FONT POINT-SIZE="10">write x<SUB>{i}'
                         f'</SUB></FONT>>, {role("value")}];')
        elif i == refused:
            lines.append(f'  v{i} [label=<<B>refused</B>: u<SUB>{i}</SUB> ≥ p<SUB>{i}</SUB>'
                         f'(x<SUB>{i}</SUB>) / q<SUB>{i}</SUB>(x<SUB>{i}</SUB>)<BR/><FONT '
                         f'POINT-SIZE="10">write y ~ max(0, p<SUB>{i}</SUB> − q<SUB>{i}</SUB>), '
                         f'normalised</FONT>>, {role("mask")}];')
        else:
            lines.append(f'  v{i} [label=<dropped, not tested>, color="#999999", '
                         f'fontcolor="#777777", style="rounded,dashed"];')
        if i > 1:
            lines.append(f'  d{i - 1} -> d{i} [label=" then", {edge_role("key")}];')
    lines.append(f'  model [label=<<B>one pass of the model</B> over the prefix and x<SUB>1</SUB> '
                 f'… x<SUB>{k}</SUB>: its distributions p<SUB>1</SUB> … p<SUB>{k + 1}</SUB> '
                 f'at once<BR/><FONT POINT-SIZE="10">reads the weights and the cache once, '
                 f'like one decoding step</FONT>>, {role("query")}];')
    for i in range(1, k + 1):
        lines.append(f'  d{i} -> model [{edge_role("key")}];')
        lines.append(f'  model -> v{i} [label=" p{i}", {edge_role("query")}];')
    for i in range(1, k):
        style = 'style=dashed, color="#999999"' if i >= refused else f'color="{kstroke}"'
        if i < refused:
            style = f'color="{ROLES["value"][0]}"'
        lines.append(f'  v{i} -> v{i + 1} [{style}];')
    written = refused
    lines.append(f'  out [label=<the round writes {written} tokens: x<SUB>1</SUB> … '
                 f'x<SUB>{refused - 1}</SUB>, y<BR/><FONT POINT-SIZE="10">had all {k} been kept: '
                 f'a token from p<SUB>{k + 1}</SUB>, {k + 1} tokens</FONT>>, {role("output")}];')
    lines.append(f'  v{refused} -> out;')
    ranks = (f"  {{ rank=same; {' '.join(f'd{i};' for i in range(1, k + 1))} }}\n"
             f"  {{ rank=same; {' '.join(f'v{i};' for i in range(1, k + 1))} }}")
    return graph_header("speculative", rankdir="TB", nodesep=0.25, ranksep=0.45) + \
        "\n".join(lines) + "\n" + ranks + "\n}\n"
