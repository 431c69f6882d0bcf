"""POSG targets for PermGen: tags move with their sentences, and the loss is Eq. 4 inside Eq. 7."""

from __future__ import annotations

import itertools

import pytest
import torch

from engine.heads.posg import POSGHead
from engine.model import IGNORE_INDEX
from engine.permgen.data import encode_examples
from engine.permgen.marks import mark_groups, mark_target
from engine.permgen.model import EncodedExample, PermGenModel, collate
from engine.permgen.readers import read_examples
from engine.permgen.tagging import attach_groups, sentence_texts, tag_targets
from engine.pos import SpacyTagger
from engine.pos.vocab import PosVocabulary
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

FIRST_WORD = len(SPECIAL_TOKENS)
MARK = 2  # the special group of the tiny vocabulary below
# token 50 is in both word groups (a token seen with two tags); its observed tag here is group 1
EXAMPLES = [
    EncodedExample([40, 41, 42], [[50, 51], [52], [53, 54, 55]], [[1, 1], [0], [1, 0, 1]]),
    EncodedExample([43], [[60], [61, 62]], [[0], [1, 0]]),
]


def test_tags_follow_their_tokens_through_a_permutation() -> None:
    batch = collate(EXAMPLES, [[3, 1, 2], [2, 1]], mark_group=MARK)
    assert batch.target_groups is not None
    #                  <B-3> 53 54 55 <E-3> <B-1> 50 51 <E-1> <B-2> 52 <E-2> <EOP>
    assert batch.target_groups[0].tolist() == [2, 1, 0, 1, 2, 2, 1, 1, 2, 2, 0, 2, 2]
    #                  <B-2> 61 62 <E-2> <B-1> 60 <E-1> <EOP>, then padding
    assert batch.target_groups[1].tolist() == [2, 1, 0, 2, 2, 0, 2, 2, *[IGNORE_INDEX] * 5]
    assert torch.equal(batch.target_groups == IGNORE_INDEX, batch.targets == IGNORE_INDEX)
    assert collate(EXAMPLES, [[3, 1, 2], [2, 1]]).target_groups is None  # evaluation: no groups, the marginal


@pytest.mark.parametrize("order", list(itertools.permutations([1, 2, 3])))
def test_every_order_keeps_each_token_with_its_own_tag(order: tuple[int, ...]) -> None:
    """With each token's 'tag' set to the token itself, the laid-out tags must equal the target ids."""
    sentences = EXAMPLES[0].sentences
    marked = mark_target(sentences, order)
    assert mark_groups(sentences, order, -1) == [x if x >= FIRST_WORD else -1 for x in marked]


def test_groups_that_do_not_fit_their_sentences_are_refused() -> None:
    no_groups = EncodedExample([40], [[50, 51]])
    short = EncodedExample([40], [[50, 51]], [[0]])
    for example in (no_groups, short):
        with pytest.raises(ValueError, match="one group per target token"):
            collate([example], [[1]], mark_group=MARK)


@pytest.fixture
def posg_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    vocab = pg_tokenizer.vocab_size
    model = PermGenModel(tiny_permgen_config(vocab, head="posg", pos_tags=["NN", "VB", "<special>"])).eval()
    ids = torch.arange(vocab)
    membership = torch.stack([(ids >= FIRST_WORD) & (ids % 2 == 0), (ids >= FIRST_WORD) & (ids % 2 == 1),
                              ids < FIRST_WORD])  # [3, V]: even words, odd words, specials
    membership[1, 50] = True  # 50 is even: in both word groups
    assert isinstance(model.head, POSGHead)
    model.head.set_vocabulary(PosVocabulary.from_membership(model.head.tags, membership))
    return model


def test_posg_loss_is_the_brute_force_eq4_sum_averaged_over_the_batch(posg_model: PermGenModel) -> None:
    batch = collate(EXAMPLES, [[3, 1, 2], [2, 1]], mark_group=MARK)
    assert batch.target_groups is not None
    head = posg_model.head
    assert isinstance(head, POSGHead)
    hidden = posg_model.decoder_hidden(batch).detach().double()  # [B, T, D]
    words, tags = head.proj.weight.detach().double(), head.pos_proj.weight.detach().double()
    per_example = []
    for i in range(2):
        total = 0.0
        for t in range(batch.targets.shape[1]):
            x, rho = int(batch.targets[i, t]), int(batch.target_groups[i, t])
            if x == IGNORE_INDEX:
                continue
            h = hidden[i, t]
            log_p_tag = torch.log_softmax(tags @ h, dim=0)[rho]
            logits = words @ h
            log_p_token = logits[x] - torch.logsumexp(logits[head.membership[rho]], dim=0)
            total -= float(log_p_tag + log_p_token)
        per_example.append(total)
    loss = posg_model(batch)
    assert float(loss.detach()) == pytest.approx(sum(per_example) / 2, rel=1e-5)
    loss.backward()  # padding positions hold +inf before masking: no nan may reach the weights
    assert all(bool(torch.isfinite(p.grad).all()) for p in posg_model.parameters() if p.grad is not None)


def test_observed_tag_loss_bounds_the_marginal(posg_model: PermGenModel) -> None:
    """−log Σ_ρ p(ρ)p(x|ρ) ≤ −log p(ρ_t)p(x|ρ_t), strictly for token 50 (in two groups)."""
    orders = [[1, 2, 3], [1, 2]]
    with torch.no_grad():
        tagged = posg_model.token_nll(collate(EXAMPLES, orders, mark_group=MARK))
        marginal = posg_model.token_nll(collate(EXAMPLES, orders))
    assert bool((marginal <= tagged + 1e-5).all())
    assert float(marginal[0, 1]) < float(tagged[0, 1]) - 1e-4  # target 1 of example 0 is token 50


def test_tagged_sentences_are_cut_like_their_tokens(pg_tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    examples = read_examples(STORIES)
    pos = tag_targets(examples, pg_tokenizer, cache_dir=tmp_path_factory.mktemp("tags"), progress=False,
                      tagger=spacy_tagger)
    encoded = attach_groups(encode_examples(examples, pg_tokenizer, 32, 6), pos)  # sentences cut to 4 tokens
    full = iter(pos.group_ids)
    for example in encoded:
        assert example.groups is not None
        for sentence, groups in zip(example.sentences, example.groups, strict=True):
            assert len(groups) == len(sentence) <= 4 and groups == next(full)[: len(sentence)]
    assert len(pos.group_ids) == len(sentence_texts(examples)) == 5 * len(examples)
    with pytest.raises(ValueError, match="tagged sentences"):
        attach_groups(encoded[1:], pos)
