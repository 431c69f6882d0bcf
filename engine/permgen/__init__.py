"""PermGen (Yu et al.): sentence-permuted paragraph generation with a BART-style encoder-decoder.

marks (sentence marks, hierarchical positions) · permutation (pi-SGD orders) · model (Eq. 7 loss) ·
control + decode + sampling (sentence-based decoding, order control, Eq. 8 ranking) · readers, keywords,
text, data (task data) · train, bundle, card, api (training, bundles, the engine API).
"""
