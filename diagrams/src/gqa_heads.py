"""Query heads sharing key/value heads (chapter 9): multi-head, grouped-query, multi-query.

Drawn for the chapter's model: its query heads, and the key/value head counts it is converted
to. Query head h reads key/value head h // G, G = H / H_kv (attnlib.blocks.gqa).
"""

from __future__ import annotations

from typing import Any

from _style import ROLES, graph_header, role

NAME = "gqa_heads"
CHAPTER = "09_attention_in_language_models"
TOOL = "dot"


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks.gqa import repeat_kv

    H = 4  # the chapter's model: DecoderLMConfig(num_heads=4), pooled to 2 and 1
    panels = []
    for H_kv in (4, 2, 1):
        # which key/value head each query head reads, from attnlib's own repetition
        heads = torch.arange(H_kv, dtype=torch.float64).view(1, H_kv, 1, 1)
        reads = repeat_kv(heads, H // H_kv).flatten().long().tolist()
        panels.append({"kv_heads": H_kv, "reads": reads})
    return {"num_heads": H, "panels": panels}


def render(values: dict[str, Any]) -> str:
    names = {4: "multi-head attention", 2: "grouped-query attention", 1: "multi-query attention"}
    H = values["num_heads"]
    kstroke, kfill = ROLES["key"]
    vstroke, vfill = ROLES["value"]
    body = []
    for p, panel in enumerate(values["panels"]):
        H_kv = panel["kv_heads"]
        G = H // H_kv
        body.append(f'  subgraph cluster_{p} {{ label=<<B>{names[H_kv]}</B><BR/>'
                    f'H<SUB>kv</SUB> = {H_kv}, groups of G = {G}>; color="#bbbbbb"; '
                    f'style="rounded"; fontsize=12;')
        for h in range(H):
            body.append(f'    q{p}_{h} [label=<q<SUB>{h}</SUB>>, {role("query")}];')
        for j in range(H_kv):
            label = (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
                     f'<TR><TD BGCOLOR="{kfill}" COLOR="{kstroke}"><FONT COLOR="{kstroke}">'
                     f'k<SUB>{j}</SUB></FONT></TD><TD BGCOLOR="{vfill}" COLOR="{vstroke}">'
                     f'<FONT COLOR="{vstroke}">v<SUB>{j}</SUB></FONT></TD></TR></TABLE>>')
            body.append(f'    kv{p}_{j} [shape=plain, style="", label={label}];')
        body.append(f'    cache{p} [shape=plaintext, style="", label=<<FONT POINT-SIZE="10">'
                    f'cache: {H_kv} key and {H_kv} value vectors<BR/>per token and layer'
                    f'</FONT>>];')
        # left to right in head order (invisible edges fix the order within a rank)
        body.append(f'    {{ rank=same; {" -> ".join(f"q{p}_{h}" for h in range(H))} '
                    f'[style=invis]; }}')
        if H_kv > 1:
            body.append(f'    {{ rank=same; {" -> ".join(f"kv{p}_{j}" for j in range(H_kv))} '
                        f'[style=invis]; }}')
        for h, j in enumerate(panel["reads"]):
            body.append(f'    q{p}_{h} -> kv{p}_{j} [color="{ROLES["query"][0]}"];')
        body.append(f'    kv{p}_0 -> cache{p} [style=invis];')
        body.append("  }")
    return graph_header("gqa_heads", rankdir="TB", nodesep=0.18, ranksep=0.45) + "\n".join(
        body) + "\n}\n"
