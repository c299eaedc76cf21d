"""The Bahdanau encoder-decoder of chapter 4: encoder states as keys and values, the decoder
state as the query, the context vector fed into the decoder's next step."""

from __future__ import annotations

from typing import Any

from _style import INK, edge_role, graph_header, role, striped

NAME = "bahdanau_seq2seq"
CHAPTER = "04_seq2seq_attention"
TOOL = "dot"


def values() -> dict[str, Any]:
    return {}  # a pure block diagram: it draws no numbers


def _h(j: str) -> str:
    return f"<<B>h</B><SUB>{j}</SUB> = [→<B>h</B><SUB>{j}</SUB> ; ←<B>h</B><SUB>{j}</SUB>]>"


def _gru(name: str) -> str:
    return (f'  e{name} [shape=plain, style="", label=<<TABLE BORDER="0" CELLBORDER="1" '
            f'CELLSPACING="4" CELLPADDING="5" COLOR="{INK}"><TR><TD PORT="f">GRU →</TD></TR>'
            f'<TR><TD PORT="b">GRU ←</TD></TR></TABLE>>];')


def render(values: dict[str, Any]) -> str:
    positions = [("1", "1"), ("2", "2"), ("S", "<I>S</I>")]
    enc = []
    for name, j in positions:
        enc.append(f'    x{name} [label=<<B>x</B><SUB>{j}</SUB>>, {role("output")}];')
        enc.append("  " + _gru(name))
        enc.append(f'    h{name} [label={_h(j)}, {striped("key", "value")}];')
        enc.append(f"    x{name} -> e{name} -> h{name};")
    return graph_header("bahdanau_seq2seq", rankdir="TB", nodesep=0.25, ranksep=0.3) + f"""
  subgraph cluster_encoder {{
    label=<<B>encoder</B>: a bidirectional GRU reads the source embeddings once each way>; labeljust=l;
    color="#999999"; style="rounded";
{chr(10).join(enc)}
    xd [label="…", shape=plaintext, style=""];
    ed [shape=plain, style="", label=<<TABLE BORDER="0" CELLSPACING="4" CELLPADDING="5"><TR><TD PORT="f">…</TD></TR><TR><TD PORT="b">…</TD></TR></TABLE>>];
    hd [label="…", shape=plaintext, style=""];
    xd -> ed -> hd [style=invis];
    {{ rank=same; x1; x2; xd; xS; }}
    {{ rank=same; e1; e2; ed; eS; }}
    {{ rank=same; h1; h2; hd; hS; }}
    e1:f -> e2:f; e2:f -> ed:f; ed:f -> eS:f;
    eS:b -> ed:b [constraint=false]; ed:b -> e2:b [constraint=false]; e2:b -> e1:b [constraint=false];
    x1 -> x2 -> xd -> xS [style=invis]; h1 -> h2 -> hd -> hS [style=invis];
  }}
  kv [label=<keys = values: <B>h</B><SUB>1</SUB>, …, <B>h</B><SUB><I>S</I></SUB> ∈ ℝ<SUP>2H</SUP><BR/><FONT POINT-SIZE="10">padded positions masked (weight 0)</FONT>>, {striped("key", "value")}];
  h1 -> kv; h2 -> kv; hS -> kv;

  subgraph cluster_decoder {{
    label=<<B>decoder, output step <I>t</I></B>>; labeljust=l; color="#999999"; style="rounded";
    s0 [label=<query <B>s</B><SUB><I>t</I>−1</SUB><BR/><FONT POINT-SIZE="10">the previous decoder state</FONT>>, {role("query")}];
    score [label=<additive score  <I>a</I>(<B>s</B><SUB><I>t</I>−1</SUB>, <B>h</B><SUB><I>j</I></SUB>)<BR/>softmax → weights α<SUB><I>tj</I></SUB>>, {role("score")}];
    ctx [label=<context <B>c</B><SUB><I>t</I></SUB> = Σ<SUB><I>j</I></SUB> α<SUB><I>tj</I></SUB> <B>h</B><SUB><I>j</I></SUB>>, {role("output")}];
    y0 [label=<emb(<I>y</I><SUB><I>t</I>−1</SUB>)<BR/><FONT POINT-SIZE="10">the previous word</FONT>>, {role("output")}];
    gru [label=<GRU: <B>s</B><SUB><I>t</I></SUB> = GRU([emb(<I>y</I><SUB><I>t</I>−1</SUB>) ; <B>c</B><SUB><I>t</I></SUB>], <B>s</B><SUB><I>t</I>−1</SUB>)>, {role("op")}];
    outp [label=<p(<I>y</I><SUB><I>t</I></SUB> | …) = softmax(<B>W</B><SUB>o</SUB>[<B>s</B><SUB><I>t</I></SUB> ; <B>c</B><SUB><I>t</I></SUB>] + <B>b</B><SUB>o</SUB>)>, {role("op")}];
    st [label=<<B>s</B><SUB><I>t</I></SUB>: the query of step <I>t</I> + 1>, {role("query")}];
    yt [label=<word <I>y</I><SUB><I>t</I></SUB>: the input of step <I>t</I> + 1>, {role("output")}];
    {{ rank=same; s0; score; }}
    s0 -> score [label=" query", {edge_role("query")}];
    score -> ctx;
    ctx -> gru [label=" input feeding"];
    y0 -> gru;
    s0 -> gru [{edge_role("query")}];
    gru -> outp [label=<  <B>s</B><SUB><I>t</I></SUB>>];
    ctx -> outp [constraint=false];
    gru -> st [{edge_role("query")}];
    outp -> yt;
  }}
  kv -> score [label=<  keys>, {edge_role("key")}];
  kv -> ctx [label=<  values>, {edge_role("value")}];
}}
"""
