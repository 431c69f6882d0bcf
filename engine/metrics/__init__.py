"""Every metric of the five papers, one definition each; see each module's docstring.

ngrams (vectorised counting) · bleu (Self-BLEU, pairwise Self-BLEU, sentence/corpus/oracle BLEU)
· diversity (Distinct-n, Uniq, Entropy-n) · repetition (Rep, seq-rep-n) · similarity (KLD,
MS-Jaccard) · frequency (AGG groups, shares, I(W)) · termination (r_nt(L), p(eos) curves) ·
paraphrase (BLEU, ROUGE, Self-BLEU / Self-WER vs source) · suite (the F² / POSG continuation
table). Perplexity from the marginal log p, per frequency group and in total, is
engine/diagnostics/predictions.py; `variorum perplexity` is engine/perplexity.py.
"""
