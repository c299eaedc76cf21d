"""Multi-head latent attention's data flow (chapter 10): what is computed, what is cached, and
the absorbed path. Sizes from DeepSeek-V2 (attnlib.experiments.latent_cache.PUBLISHED_MLA)."""

from __future__ import annotations

from typing import Any

from _style import ROLES, edge_role, graph_header, role

NAME = "mla_flow"
CHAPTER = "10_modern_attention"
TOOL = "dot"


def values() -> dict[str, Any]:
    from attnlib.experiments.latent_cache import PUBLISHED_MLA

    shape = PUBLISHED_MLA["DeepSeek-V2"]
    return {"model": shape.name, "H": shape.num_heads, "E": shape.head_dim,
            "d_c": shape.latent_dim, "R": shape.rope_dim,
            "cached": shape.latent_dim + shape.rope_dim}


def render(values: dict[str, Any]) -> str:
    v = values
    H, E, d_c, R = v["H"], v["E"], v["d_c"], v["R"]
    ostroke = ROLES["output"][0]
    lines = [
        f'  h [label=<<B>h</B><SUB>t</SUB>>, {role("output")}];',
        f'  c [label=<latent <B>c</B><SUB>t</SUB> = W<SUP>DKV</SUP><B>h</B><SUB>t</SUB><BR/>'
        f'{d_c} numbers>, {role("value")}];',
        f'  kr [label=<rotated key <B>k</B><SUP>R</SUP><SUB>t</SUB> = RoPE(W<SUP>KR</SUP>'
        f'<B>h</B><SUB>t</SUB>)<BR/>{R} numbers, shared by all {H} heads>, {role("key")}];',
        f'  q [label=<per head i: <B>q</B><SUP>C</SUP><SUB>t,i</SUB> ({E}), '
        f'<B>q</B><SUP>R</SUP><SUB>t,i</SUB> ({R}, rotated)>, {role("query")}];',
        '  subgraph cluster_cache { label=<<B>the cache: '
        f'{d_c} + {R} = {v["cached"]} numbers per token and layer</B>>; '
        'style="rounded,dashed"; color="#888888"; c; kr; }',
        f'  kc [label=<naive: per head i<BR/><B>k</B><SUP>C</SUP><SUB>t,i</SUB> = '
        f'W<SUP>UK</SUP><SUB>i</SUB><B>c</B><SUB>t</SUB> ({E}),  '
        f'<B>v</B><SUB>t,i</SUB> = W<SUP>UV</SUP><SUB>i</SUB><B>c</B><SUB>t</SUB> ({E})>, '
        f'{role("key")}];',
        f'  naive [label=<naive scores: <B>q</B><SUP>C</SUP><SUB>t,i</SUB>·<B>k</B><SUP>C</SUP>'
        f'<SUB>j,i</SUB> + <B>q</B><SUP>R</SUP><SUB>t,i</SUB>·<B>k</B><SUP>R</SUP><SUB>j</SUB>'
        f'<BR/>average the <B>v</B><SUB>j,i</SUB>>, {role("score")}];',
        f'  absorbed [label=<absorbed: (W<SUP>UK</SUP><SUB>i</SUB>)<SUP>⊤</SUP><B>q</B><SUP>C'
        f'</SUP><SUB>t,i</SUB> · <B>c</B><SUB>j</SUB> + <B>q</B><SUP>R</SUP><SUB>t,i</SUB>·'
        f'<B>k</B><SUP>R</SUP><SUB>j</SUB><BR/>average the <B>c</B><SUB>j</SUB> ({d_c}), then '
        f'W<SUP>O</SUP><SUB>i</SUB>W<SUP>UV</SUP><SUB>i</SUB>>, {role("score")}];',
        f'  o [label=<output: the {H} heads through W<SUP>O</SUP>>, {role("output")}];',
        f'  h -> c [{edge_role("value")}];',
        f'  h -> kr [{edge_role("key")}];',
        f'  h -> q [{edge_role("query")}];',
        f'  c -> kc [{edge_role("value")}, label=" up-project"];',
        f'  kc -> naive [{edge_role("key")}];',
        f'  kr -> naive [{edge_role("key")}];',
        f'  q -> naive [{edge_role("query")}];',
        f'  c -> absorbed [{edge_role("value")}, style=dashed, label=" read as is"];',
        f'  kr -> absorbed [{edge_role("key")}, style=dashed];',
        f'  q -> absorbed [{edge_role("query")}, style=dashed];',
        f'  naive -> o [color="{ostroke}"];',
        f'  absorbed -> o [color="{ostroke}", style=dashed];',
        '  { rank=same; c; kr; q; }',
        '  { rank=same; naive; absorbed; }',
    ]
    return graph_header("mla_flow", rankdir="TB", nodesep=0.35, ranksep=0.4) + "\n".join(
        lines) + "\n}\n"
