"""The Transformer of chapter 7, labelled with the sizes chapter 7 trains.

The sizes come from attnlib.models.transformer.config.CHAPTER7_SIZES (the dictionary chapter 7
builds its config from), never typed here: change the model and the diagram's stamp goes stale.
The label names it models.transformer.CHAPTER7_SIZES (re-exported by the package), which keeps
the drawing as wide as the book's column.
"""

from __future__ import annotations

from typing import Any

from _style import ROLES, edge_role, graph_header, role, striped

NAME = "transformer"
CHAPTER = "07_transformer"
TOOL = "dot"


def values() -> dict[str, Any]:
    from attnlib.models.transformer import CHAPTER7_SIZES

    sizes = dict(CHAPTER7_SIZES)
    sizes["head_dim"] = sizes["d_model"] // sizes["num_heads"]  # E = D / H, derived
    return sizes


def _small(text: str) -> str:
    return f'<FONT POINT-SIZE="10">{text}</FONT>'


def render(values: dict[str, Any]) -> str:
    D, H, E = values["d_model"], values["num_heads"], values["head_dim"]
    n_enc, n_dec, d_ff = values["num_encoder_layers"], values["num_decoder_layers"], values["d_ff"]
    mha = f"H = {H} heads of E = {E}"
    mask_stroke = ROLES["mask"][0]
    ffn = f"D → d<SUB>ff</SUB> = {d_ff} → D, ReLU between"
    add_ln = f"Add &amp; LayerNorm{_small('<BR/>post-LN: LN(x + f(x))')}"
    def mask(text: str) -> str:
        return f'<BR/><FONT COLOR="{mask_stroke}" POINT-SIZE="11"><B>mask:</B> {text}</FONT>'

    residual = 'style=dashed, color="#555555", constraint=false, label=" residual", fontcolor="#555555"'
    return graph_header("transformer", rankdir="BT", nodesep=0.3, ranksep=0.28) + f"""
  label=<<B>The Transformer of chapter 7</B>: D = {D}, H = {H}, N = {n_enc} encoder and {n_dec} decoder layers, d<SUB>ff</SUB> = {d_ff}  (models.transformer.CHAPTER7_SIZES)>;
  labelloc=t; fontsize=13;

  subgraph cluster_encoder {{
    label=<<B>encoder</B>>; labeljust=l; color="#999999"; style="rounded";
    src [label=<source tokens <B>x</B>  (B, S)>, {role("output")}];
    eemb [label=<embedding × √D, D = {D}<BR/>+ sinusoidal positions, dropout>, {role("op")}];
    subgraph cluster_enc_layer {{
      label=<<B>encoder layer</B> × N = {n_enc}>; labeljust=r; color="#777777"; style="rounded,dashed";
      esa [label=<multi-head self-attention<BR/>{_small(mha + "<BR/>queries = keys = values = the layer input")}{mask("source padding (B, S)")}>, {role("op")}];
      eln1 [label=<{add_ln}>, {role("norm")}];
      effn [label=<feed-forward network<BR/>{_small(ffn)}>, {role("op")}];
      eln2 [label=<{add_ln}>, {role("norm")}];
    }}
    enc_out [label=<encoder output <B>H</B><SUP>(N)</SUP>  (B, S, D)>, {striped("key", "value")}];
    src -> eemb [label="  (B, S)"];
    eemb -> esa [label="  (B, S, D)"];
    esa -> eln1 -> effn -> eln2;
    eln2 -> enc_out;
    eemb -> eln1 [{residual}];
    eln1 -> eln2 [{residual}];
  }}

  subgraph cluster_decoder {{
    label=<<B>decoder</B>>; labeljust=r; color="#999999"; style="rounded";
    tgt [label=<target prefix <B>y</B><SUB>&lt;t</SUB>, shifted right  (B, L)>, {role("output")}];
    demb [label=<embedding × √D, D = {D}<BR/>+ sinusoidal positions, dropout>, {role("op")}];
    subgraph cluster_dec_layer {{
      label=<<B>decoder layer</B> × N = {n_dec}>; labeljust=l; color="#777777"; style="rounded,dashed";
      dsa [label=<masked multi-head self-attention<BR/>{_small(mha)}{mask("causal (L, L)")}{mask("and target padding (B, L)")}>, {role("op")}];
      dln1 [label=<{add_ln}>, {role("norm")}];
      dca [label=<multi-head cross-attention<BR/>{_small(mha + "<BR/>queries from the decoder,<BR/>keys and values from the encoder")}{mask("source padding (B, S)")}>, {role("op")}];
      dln2 [label=<{add_ln}>, {role("norm")}];
      dffn [label=<feed-forward network<BR/>{_small(ffn)}>, {role("op")}];
      dln3 [label=<{add_ln}>, {role("norm")}];
    }}
    lin [label=<output layer: the target embedding, transposed (tied)<BR/>softmax → p(y<SUB>t</SUB> | <B>y</B><SUB>&lt;t</SUB>, <B>x</B>)>, {role("output")}];
    tgt -> demb [label="  (B, L)"];
    demb -> dsa [label="  (B, L, D)"];
    dsa -> dln1;
    dln1 -> dca [label=" queries", {edge_role("query")}];
    dca -> dln2 -> dffn -> dln3;
    dln3 -> lin [label="  (B, L, D)"];
    demb -> dln1 [{residual}];
    dln1 -> dln2 [{residual}];
    dln2 -> dln3 [{residual}];
  }}
  enc_out -> dca [label=" keys = values", color="{ROLES['key'][0]}:{ROLES['value'][0]}", fontcolor="{ROLES['key'][0]}"];

  tgt -> src [style=invis];
  {{ rank=same; src; tgt; }}

  subgraph cluster_ln {{
    label=<<B>where the LayerNorm goes</B>, for a sub-layer f:<BR/>post-LN (norm_first=False, the paper, drawn above)<BR/>or pre-LN (norm_first=True, plus one LN after the last layer)>; labelloc=b; labeljust=l;
    color="#999999"; style="rounded";
    px [label="x", shape=plaintext, style=""]; pf [label="f", {role("op")}];
    padd [label="+", shape=circle, {role("op")}, margin="0.02"]; pln [label="LN", {role("norm")}];
    pout [label=<post-LN: LN(x + f(x))>, shape=plaintext, style=""];
    px -> pf -> padd -> pln -> pout; px -> padd [style=dashed, color="#555555"];
    rx [label="x", shape=plaintext, style=""]; rln [label="LN", {role("norm")}];
    rf [label="f", {role("op")}]; radd [label="+", shape=circle, {role("op")}, margin="0.02"];
    rout [label=<pre-LN: x + f(LN(x))>, shape=plaintext, style=""];
    rx -> rln -> rf -> radd -> rout; rx -> radd [style=dashed, color="#555555"];
    {{ rank=same; px; pf; padd; pln; pout; }}
    {{ rank=same; rx; rln; rf; radd; rout; }}
    rx -> px [style=invis];
  }}
  enc_out -> rx [style=invis]; tgt -> src [style=invis];
}}
"""
