"""Hybrid and local/global stacks (chapter 10): one repeating period of layers per model, each
layer coloured by what it keeps while generating. The layouts are the published ones the
chapter's tables give (model cards and reports); the chapter's own hybrid is 3 DeltaNet layers
and 1 attention layer."""

from __future__ import annotations

from typing import Any

from _style import INK, ROLES, graph_header

NAME = "hybrid_stack"
CHAPTER = "10_modern_attention"
TOOL = "dot"

# model: (its layers in one period, bottom first: "state" | "global" | "window N"), periods
LAYOUTS: dict[str, tuple[list[str], str]] = {
    "Qwen3-Next": (["state: Gated DeltaNet"] * 3 + ["global: gated attention"], "× 12 = 48 layers"),
    "Kimi Linear": (["state: Kimi Delta Attention"] * 3 + ["global: MLA"], "repeated"),
    "Gemma 3": (["window 1024"] * 5 + ["global"], "repeated"),
    "gpt-oss": (["window 128", "global"], "repeated"),
}


def values() -> dict[str, Any]:
    return {name: {"period": layers, "repeat": repeat} for name, (layers, repeat) in LAYOUTS.items()}


def _cell(layer: str) -> str:
    if layer.startswith("state"):
        stroke, fill = ROLES["score"]
        text, style = layer.split(": ", 1)[1], ""
    elif layer.startswith("global"):
        stroke, fill = ROLES["key"]
        text, style = layer.split(": ", 1)[1] if ": " in layer else "global attention", ""
    else:
        stroke, fill = ROLES["key"][0], "#ffffff"
        text, style = f"attention, {layer}", ' STYLE="dashed"'
    return (f'<TD BGCOLOR="{fill}" COLOR="{stroke}"{style} WIDTH="150"><FONT COLOR="{stroke}">'
            f'{text}</FONT></TD>')


def render(values: dict[str, Any]) -> str:
    nodes, names = [], list(values)
    for n, name in enumerate(names):
        period = values[name]["period"]
        rows = "".join(f"<TR>{_cell(layer)}</TR>" for layer in reversed(period))  # top layer first
        nodes.append(
            f'  m{n} [shape=plain, style="", label=<<TABLE BORDER="0" CELLBORDER="1" '
            f'CELLSPACING="2" CELLPADDING="4"><TR><TD BORDER="0"><B>{name}</B></TD></TR>{rows}'
            f'<TR><TD BORDER="0"><FONT COLOR="{INK}">one period, {values[name]["repeat"]}</FONT>'
            f'</TD></TR></TABLE>>];')
    sstroke, sfill = ROLES["score"]
    kstroke, kfill = ROLES["key"]
    legend = (
        f'  legend [shape=plain, style="", label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" '
        f'CELLPADDING="4"><TR><TD BGCOLOR="{sfill}" COLOR="{sstroke}"><FONT COLOR="{sstroke}">'
        f'a state of fixed size (E × E<SUB>v</SUB> per head)</FONT></TD>'
        f'<TD BGCOLOR="{kfill}" COLOR="{kstroke}"><FONT COLOR="{kstroke}">keys and values of every '
        f'token (grows)</FONT></TD><TD COLOR="{kstroke}" STYLE="dashed"><FONT COLOR="{kstroke}">'
        f'keys and values of the last w tokens</FONT></TD></TR></TABLE>>];')
    ranks = " ".join(f"m{n};" for n in range(len(names)))
    edges = "\n".join(f"  m{n} -> legend [style=invis];" for n in range(len(names)))
    return (graph_header("hybrid_stack", rankdir="TB", nodesep=0.3, ranksep=0.25)
            + "\n".join(nodes) + f"\n{legend}\n  {{ rank=same; {ranks} }}\n{edges}\n}}\n")
