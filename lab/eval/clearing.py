"""Does a sentence blame something, or clear it? Per clause, per mention.

A root cause is often stated in the negative ("nothing listens on 8080", "the VM is not
running", "no ICMP comes back"), so a negation near a name does not clear it. What clears a
thing is language about it *as a cause*: "X is not the cause", "ruled out X", "X was fine",
"X is a red herring", "X did not cause it", "not X but Y", "X had nothing to do with it",
"X, not the cause". Each mention of a term is judged on its own, inside its clause (clauses end
at ``.;!?:``, a line break, a spaced dash, and at "but", "while", "whereas", "although",
"though", "however", "yet", "because", "which"), so "deny-web-to-redis drops 6379; the
api-vm-02 deployment is unrelated" clears api-vm-02 and blames deny-web-to-redis.

Two shapes are recognised:
- the term, then (in the same clause) a predicate that clears its subject: a linking verb and
  an innocent state ("is fine", "was healthy", "looks normal", "turned out to be a
  coincidence", "was ruled out", "is not the cause", "is not to blame", "was not involved"),
  "did not cause / explain / affect / matter", "has nothing to do with", "played no part",
  "cannot explain", "checks out", ", not the cause"; it clears the nearest term before it and
  the terms listed with it ("A and B were fine");
- a clearing word, then the term close after it: "ruled out", "excluded", "refuted",
  "cleared", "eliminated", "dismissed", "rather than", "instead of", "not" (when it does not
  belong to a verb: "…, not X"), "nor", "neither", "unlike", "other than", "nothing wrong
  with", "no problem with", "no fault in", "innocent".
A double negation ("is not a coincidence", "was not fine") blames.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CLAUSE_SPLIT = re.compile(
    r"(?<=[.;!?])\s+|\n+|"
    r",?\s+\b(?:but|while|whereas|although|though|however|yet|because|which)\b\s+",
    re.IGNORECASE)

_BE = (r"(?:is|was|are|were|be|been|being|seems?|seemed|looks?|looked|appears?|appeared|"
       r"proved|proves|remains?|remained|stays?|stayed|turned\s+out(?:\s+to\s+be)?)")
_INNOCENT = (r"(?:fine|ok|okay|healthy|clean|correct|normal|innocent|unrelated|irrelevant|"
             r"harmless|benign|unaffected|unchanged|in\s+order|as\s+expected|working(?:\s+"
             r"(?:fine|correctly|normally|as\s+(?:expected|intended|designed)))?|"
             r"(?:a|an|just\s+a|only\s+a|merely\s+a)\s+(?:red\s+herring|coincidence|"
             r"distraction|symptom|side\s+effect|false\s+lead)|red\s+herrings?|coincidental|"
             r"ruled\s+out|refuted|excluded|cleared|eliminated|dismissed|exonerated|good|"
             r"(?:a|an|just\s+a)\s+false\s+alarm|benign|"
             r"off\s+the\s+path|not\s+on\s+the\s+path|not\s+involved|uninvolved|open|"
             r"not\s+(?:at\s+fault|to\s+blame|responsible|the\s+(?:root\s+)?(?:cause|culprit|"
             r"problem|issue|reason|source|fault|explanation))|no\s+(?:factor|issue|problem))")
_CAUSE_NOUN = (r"(?:(?:root\s+)?cause|culprit|problem|issue|reason|source|fault|explanation|"
               r"trigger)")
#: predicates that clear the subject before them
POST = re.compile(
    r"\b" + _BE + r"\s+(?:also\s+|simply\s+|clearly\s+|probably\s+)?" + _INNOCENT + r"\b"
    r"|\b(?:did|does|do|could|can|would|will|has|have|had|is|was|are|were)\s*(?:not|n't|never)"
    r"\s+(?:have\s+)?(?:cause[ds]?|caused|explain|break|broken|block|blocked|drop|dropped|affect"
    r"|affected|matter|contribute|impact|touch|play\s+a\s+(?:part|role)|the\s+" + _CAUSE_NOUN
    + r"|a\s+factor|involved|responsible|to\s+blame|at\s+fault|related)\b"
    r"|\b(?:isn't|wasn't|aren't|weren't|doesn't|didn't|don't|can't|cannot|couldn't|won't)\s+"
    r"(?:have\s+)?(?:cause[ds]?|caused|explain|break|block|drop|affect|matter|contribute|impact"
    r"|the\s+" + _CAUSE_NOUN + r"|a\s+factor|involved|responsible|to\s+blame|at\s+fault|be\s+"
    r"the\s+" + _CAUSE_NOUN + r")\b"
    r"|\b(?:has|had|have)\s+nothing\s+to\s+do\s+with\b|\bplayed\s+no\s+(?:part|role)\b"
    r"|\bcannot\s+(?:explain|be\s+the)\b|\bcan\s+be\s+(?:ruled\s+out|excluded|ignored)\b"
    r"|,\s*not\s+the\s+" + _CAUSE_NOUN + r"\b|\bchanged\s+nothing\b|\bmade\s+no\s+difference\b"
    r"|\bchecks?\s+out\b|\bchecked\s+out\b"
    r"|(?:,|\(|\s[—–-])\s*(?:a|an|just\s+a|only\s+a)\s+(?:red\s+herring|coincidence|distraction|"
    r"false\s+lead)\b",
    re.IGNORECASE)
#: predicates that clear only their own subject, right before them ("nsg-app allows the
#: flow"; not "nva-fw-01 (10.0.1.4), its routes and NSGs allow the flow")
TIGHT = re.compile(
    r"\b(?:works?|worked|behaves?|behaved|performs?|performed)\s+(?:fine|correctly|normally|"
    r"as\s+(?:expected|intended|designed|configured))\b|\bdid\s+nothing\s+wrong\b"
    r"|\bonly\s+(?:matches|match|applies\s+to|apply\s+to|affects|covers|opens)\b"
    r"|\ballow(?:s|ed)?\s+(?:the|this|that|their|its)\s+(?:flow|traffic|connections?|packets?)\b",
    re.IGNORECASE)
_SUBJECT_GAP = re.compile(r"^\s*(?:(?!and\b|or\b|but\b)[A-Za-z0-9'()-]+\s+){0,3}$",
                          re.IGNORECASE)

#: words that clear the term right after them ("ruled out X", "…, not X", "rather than X")
PRE = re.compile(
    r"\b(?:ruled?\s+out|rules\s+out|ruling\s+out|exclud(?:e|ed|es|ing)|refut(?:e|ed|es|ing)|"
    r"clear(?:ed|s|ing)?|eliminat(?:e|ed|es|ing)|dismiss(?:ed|es|ing)?|exonerat(?:e|ed|es|ing)|"
    r"rather\s+than|instead\s+of|other\s+than|unlike|neither|nor|not|"
    r"(?:is|was|are|were)(?:n't|\s+not)|unrelated\s+to|not\s+related\s+to|"
    r"(?:has|had|have)\s+nothing\s+to\s+do\s+with|not\s+(?:caused\s+by|due\s+to|because\s+of)|"
    r"as\s+opposed\s+to|no\s+(?:evidence|sign|indication)\s+(?:that|of)|"
    r"nothing\s+(?:wrong|amiss)\s+(?:with|in|on|at)|no\s+(?:problem|issue|fault|error)s?\s+"
    r"(?:with|in|on|at)|innocent)\b",
    re.IGNORECASE)
#: "not" that belongs to a verb ("is not running"): not a pre-clearing word
_AUX_BEFORE = re.compile(r"\b(?:is|was|are|were|do|does|did|can|could|would|will|has|have|"
                         r"had|should|must|may|might)\s*$", re.IGNORECASE)
#: what may stand between a pre-clearing word and its term ("ruled out the busy CPU")
_GAP = re.compile(r"^[\s,:—–-]*(?:(?:the|a|an|its|their|any|both|either|that|this|rule|route|"
                  r"in|with|on|at|of|from|by|"
                  r"routes|nsg|vm|vms|change|changes|deployment|write|edit|spike|"
                  r"busy|recent|new|later|earlier|h\d{1,3}|\d\d:\d\d|[A-Za-z]+'s)"
                  r"[\s,:—–-]+){0,4}$", re.IGNORECASE)
_DOUBLE = re.compile(r"\b(?:not|n't|never)\s+(?:a\s+|an\s+|just\s+a\s+)?(?:fine|ok|okay|healthy|"
                     r"normal|coincidence|red\s+herring|unrelated|irrelevant|innocent|harmless|"
                     r"benign|working|correct)\b", re.IGNORECASE)
_LIST_GLUE = re.compile(r"^[\s,]*(?:(?:and|or|nor|as\s+well\s+as|plus|on|in|of|at|for|from|"
                        r"to|behind|inside|'s)\s+)?(?:the\s+|its\s+|their\s+)?$",
                        re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """One place a term is named: its clause, and whether that clause clears it there."""

    term: str
    clause: str
    cleared: bool


def clauses(text: str) -> list[str]:
    return [c.strip() for c in CLAUSE_SPLIT.split(text or "") if c and c.strip()]


def _spans(clause: str, terms: Iterable[str]) -> list[tuple[int, int, str]]:
    """Where each term occurs (whole words, case-insensitive), longest first at one place."""
    found: list[tuple[int, int, str]] = []
    for term in sorted({t for t in terms if t}, key=len, reverse=True):
        # a name is whole ("web-vm-01" is not in "web-vm-010"); a word may be a stem
        # ("retransmi" names "retransmissions", "listen" names "listens")
        tail = r"(?![0-9])(?!-[A-Za-z0-9])" if term[-1:].isalpha() else r"(?![A-Za-z0-9])"
        pattern = re.compile(r"(?<![A-Za-z0-9])" + re.escape(term) + tail, re.IGNORECASE)
        for m in pattern.finditer(clause):
            if not any(s <= m.start() < e or s < m.end() <= e for s, e, _ in found):
                found.append((m.start(), m.end(), term))
    return sorted(found)


def _cleared_spans(clause: str, spans: Sequence[tuple[int, int, str]]) -> set[int]:
    """Indexes (into ``spans``) of the mentions this clause clears."""
    cleared: set[int] = set()
    for m in POST.finditer(clause):
        if _DOUBLE.search(clause[m.start(): m.end() + 1]):
            continue
        before = [i for i, (_, end, _) in enumerate(spans) if end <= m.start()]
        if not before:
            continue
        cleared.add(before[-1])
        # the terms listed with it: "A and B were fine", "A, B or C is unrelated"
        for i in reversed(before[:-1]):
            between = clause[spans[i][1]: spans[i + 1][0]]
            if not _LIST_GLUE.match(between):
                break
            cleared.add(i)
    for m in TIGHT.finditer(clause):
        before = [i for i, (_, end, _) in enumerate(spans) if end <= m.start()]
        if before and _SUBJECT_GAP.match(clause[spans[before[-1]][1]: m.start()]):
            cleared.add(before[-1])
    for m in PRE.finditer(clause):
        word = m.group(0).lower()
        if word == "not" and (_AUX_BEFORE.search(clause[: m.start()])
                              or _DOUBLE.match(clause[m.start():])):
            continue
        after = [i for i, (start, _, _) in enumerate(spans) if start >= m.end()]
        if not after:
            continue
        first = after[0]
        gap = clause[m.end(): spans[first][0]]
        if not _GAP.match(gap):
            continue
        if re.match(r"(?:is|was|are|were)", word) and not gap.strip() and \
                spans[first][2].isalpha():
            continue  # "is not linked", "was not running": the fault, stated in the negative
        cleared.add(first)
        for i in after[1:]:  # "ruled out A and B"
            if not _LIST_GLUE.match(clause[spans[i - 1][1]: spans[i][0]]):
                break
            cleared.add(i)
    return cleared


#: a clause that speaks of the thing the previous clause named ("…, but it is not the cause")
_PRONOUN = re.compile(r"^\s*(?:it|this|that|they|these|those|the\s+(?:change|rule|route|write|"
                      r"edit|deployment|restart|update|spike|alert))\b", re.IGNORECASE)


def mentions(text: str, terms: Iterable[str]) -> list[Mention]:
    """Every mention of every term in ``text``, each with whether its clause clears it. A
    clause that clears a pronoun ("X changed at 14:05, but it is not the cause") clears the
    last thing the clause before it named."""
    terms = list(terms)
    out: list[Mention] = []
    for clause in clauses(text):
        spans = _spans(clause, terms)
        cleared = _cleared_spans(clause, spans)
        if out and _PRONOUN.match(clause):
            first = spans[0][0] if spans else len(clause)
            if any(m.start() < first and not _DOUBLE.search(clause[m.start(): m.end() + 1])
                   for m in POST.finditer(clause)):
                last = out[-1]
                out[-1] = Mention(last.term, last.clause, True)
        out += [Mention(term, clause, i in cleared) for i, (_, _, term) in enumerate(spans)]
    return out


def blamed_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The terms named at least once without being cleared there."""
    return list(dict.fromkeys(m.term for m in mentions(text, terms) if not m.cleared))


def cleared_terms(text: str, terms: Iterable[str]) -> list[Mention]:
    """The mentions that clear their term."""
    return [m for m in mentions(text, terms) if m.cleared]
