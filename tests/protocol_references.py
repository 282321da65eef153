"""Plain, independent implementations of the benchmark references, for the agreement tests.

Written from the published definitions and the reference scripts' observable behaviour (read, not copied; sources
and versions in docs/benchmarks.md), one function per reference, with loops over characters and words instead of
the package's column code. Nothing here imports vision_eval.
"""

from __future__ import annotations

# --- ChartQA relaxed accuracy: pix2struct metrics.py relaxed_correctness, lmms-eval tasks/chartqa/utils.py ------


def chartqa_number(text: str) -> float | None:
    """An answer as a number: Python's float(); with a trailing '%' the text without its trailing %s, over 100."""
    body, percent = text, False
    if body.endswith("%"):
        percent = True
        while body.endswith("%"):
            body = body[:-1]
    try:
        value = float(body)
    except ValueError:
        return None
    return value / 100.0 if percent else value


def chartqa_correct(prediction: str, target: str, max_relative_change: float = 0.05) -> bool:
    """Numbers (when the target's is not 0; NaN counts as a number) within the relative change, else the same
    lowercased text."""
    p, t = chartqa_number(prediction), chartqa_number(target)
    if p is not None and t is not None and t != 0.0:
        return abs(p - t) / abs(t) <= max_relative_change
    return prediction.lower() == target.lower()


def chartqa_score(prediction: str, targets: list[str], max_relative_change: float = 0.05) -> float:
    """pix2struct's aggregate: the best over the targets (lmms-eval has one target per question)."""
    return max(1.0 if chartqa_correct(prediction, t, max_relative_change) else 0.0 for t in targets)


# --- DocVQA ANLS: the RRC evaluation script (Task 1) and lmms-eval api/metrics.py anls -----------------------


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (unit insert/delete/substitute) over code points, by dynamic programming."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _squeezed(text: str) -> str:
    return " ".join(text.strip().lower().split())


def anls_score(prediction: str, answers: list[str], threshold: float = 0.5) -> float:
    """1 - the smallest (distance of the squeezed texts / the longer raw text, upper-cased), 0 below threshold."""
    values = []
    for answer in answers:
        longest = max(len(answer.upper()), len(prediction.upper()))
        values.append(0.0 if longest == 0 else edit_distance(_squeezed(answer), _squeezed(prediction)) / longest)
    result = 1 - min(values)
    return 0.0 if result < threshold else result


# --- VQA accuracy: GT-Vision-Lab vqaEval.py, lmms-eval EvalAIAnswerProcessor + textvqa_process_results ---------

MARKS = ';/[]"{}()=+\\_-><@`,?!'
SMALL_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
NUMBER_OF = {word: str(value) for value, word in enumerate(SMALL_NUMBERS)} | {"none": "0"}
ARTICLE_WORDS = {"a", "an", "the"}
# The published contraction table as (contracted-without-apostrophe -> with apostrophe) pairs. Keys it writes with a
# capital I ("Im", "Ive", "Id've", "I'dve") never match a lowercased word and are left out; identity entries too.
_TABLE = """
aint:ain't arent:aren't cant:can't couldve:could've couldnt:couldn't couldn'tve:couldn't've couldnt've:couldn't've
didnt:didn't doesnt:doesn't dont:don't hadnt:hadn't hadnt've:hadn't've hadn'tve:hadn't've hasnt:hasn't
havent:haven't hed:he'd hed've:he'd've he'dve:he'd've hes:he's howd:how'd howll:how'll hows:how's isnt:isn't
itd:it'd itd've:it'd've it'dve:it'd've itll:it'll maam:ma'am mightnt:mightn't mightnt've:mightn't've
mightn'tve:mightn't've mightve:might've mustnt:mustn't mustve:must've neednt:needn't notve:not've oclock:o'clock
oughtnt:oughtn't ow's'at:'ow's'at 'ows'at:'ow's'at 'ow'sat:'ow's'at shant:shan't shed've:she'd've she'dve:she'd've
shouldve:should've shouldnt:shouldn't shouldnt've:shouldn't've shouldn'tve:shouldn't've somebody'd:somebodyd
somebodyd've:somebody'd've somebody'dve:somebody'd've somebodyll:somebody'll somebodys:somebody's someoned:someone'd
someoned've:someone'd've someone'dve:someone'd've someonell:someone'll someones:someone's somethingd:something'd
somethingd've:something'd've something'dve:something'd've somethingll:something'll thats:that's thered:there'd
thered've:there'd've there'dve:there'd've therere:there're theres:there's theyd:they'd theyd've:they'd've
they'dve:they'd've theyll:they'll theyre:they're theyve:they've twas:'twas wasnt:wasn't wed've:we'd've we'dve:we'd've
weve:we've werent:weren't whatll:what'll whatre:what're whats:what's whatve:what've whens:when's whered:where'd
wheres:where's whereve:where've whod:who'd whod've:who'd've who'dve:who'd've wholl:who'll whos:who's whove:who've
whyll:why'll whyre:why're whys:why's wont:won't wouldve:would've wouldnt:wouldn't wouldnt've:wouldn't've
wouldn'tve:wouldn't've yall:y'all yall'll:y'all'll y'allll:y'all'll yall'd've:y'all'd've y'alld've:y'all'd've
y'all'dve:y'all'd've youd:you'd youd've:you'd've you'dve:you'd've youll:you'll youre:you're youve:you've
"""
CONTRACTED = dict(pair.split(":", 1) for pair in _TABLE.split())


def _is_digit(ch: str) -> bool:
    return ch.isdecimal()  # what Python's re calls \d in a str pattern


def _digit_comma(text: str, several: bool) -> bool:
    """A digit, a comma (or a run of commas when ``several``) and a digit somewhere in ``text``."""
    for i, ch in enumerate(text):
        if ch != "," or i == 0 or not _is_digit(text[i - 1]):
            continue
        j = i + 1
        while several and j < len(text) and text[j] == ",":
            j += 1
        if j < len(text) and _is_digit(text[j]):
            return True
    return False


def _drop_periods(text: str, limit: int = 32) -> str:
    """Remove periods not followed by a digit, left to right, at most ``limit`` of them (re.sub's count=re.UNICODE)."""
    kept, removed = [], 0
    for i, ch in enumerate(text):
        followed_by_digit = i + 1 < len(text) and _is_digit(text[i + 1])
        if ch == "." and not followed_by_digit and removed < limit:
            removed += 1
            continue
        kept.append(ch)
    return "".join(kept)


def vqa_punctuation(text: str, several_commas: bool = False) -> str:
    """processPunctuation: every mark deleted (next to a space, or anywhere if the text has digit,digit) or made a
    space, each decided on the text as given; then periods dropped."""
    delete_all = _digit_comma(text, several_commas)
    out = []
    for ch in text:
        if ch in MARKS:
            out.append("" if delete_all or ch + " " in text or " " + ch in text else " ")
        else:
            out.append(ch)
    return _drop_periods("".join(out))


def vqa_digits_articles(text: str) -> str:
    """processDigitArticle: lowercase, split on whitespace, zero..ten/none as digits, no articles, contractions."""
    words = []
    for word in text.lower().split():
        word = NUMBER_OF.get(word, word)
        if word not in ARTICLE_WORDS:
            words.append(CONTRACTED.get(word, word))
    return " ".join(words)


def vqa_official_reply(reply: str) -> str:
    return vqa_digits_articles(vqa_punctuation(reply.replace("\n", " ").replace("\t", " ").strip()))


def vqa_official_score(reply: str, answers: list[str]) -> float:
    """vqaEval.evaluate for one question: answers raw when they all agree, else punctuation-processed; the mean
    over leaving each answer out of min(1, equal answers among the others / 3)."""
    prediction = vqa_official_reply(reply)
    golds = answers if len(set(answers)) == 1 else [vqa_punctuation(a) for a in answers]
    accuracies = []
    for left_out in range(len(golds)):
        equal = sum(1 for k, g in enumerate(golds) if k != left_out and g == prediction)
        accuracies.append(min(1, equal / 3))
    return sum(accuracies) / len(accuracies)


def evalai_process(text: str) -> str:
    """EvalAIAnswerProcessor: lowercase, no ',' or '?', "'s" -> " 's", strip, tabs/newlines as spaces, strip,
    punctuation (its digit-comma rule looks for digit, commas, digit), digits and articles."""
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return vqa_digits_articles(vqa_punctuation(text, several_commas=True))


def vqa_lmms_eval_score(reply: str, answers: list[str]) -> float:
    """textvqa_process_results: reply and every answer processed; statistics.mean of the leave-one-out values."""
    import statistics

    prediction = evalai_process(reply)
    golds = [evalai_process(a) for a in answers]
    values = [min(1, sum(1 for k, g in enumerate(golds) if k != i and g == prediction) / 3) for i in range(len(golds))]
    return statistics.mean(values)


# --- POPE: evaluate.py (AoiDragon/POPE) and lmms-eval tasks/pope/utils.py -------------------------------------


def pope_official_answer(reply: str) -> str:
    """First sentence, commas removed, split on single spaces; a word No/not/no means no, anything else yes."""
    first = reply.split(".")[0] if "." in reply else reply
    words = first.replace(",", "").split(" ")
    return "no" if any(w in ("No", "not", "no") for w in words) else "yes"


def pope_official_metrics(replies: list[str], labels: list[str]) -> dict[str, float]:
    """The script's counts and ratios (a label other than 'no' is positive; here labels are yes/no)."""
    predictions = [pope_official_answer(r) for r in replies]
    tp = sum(p == "yes" and lab == "yes" for p, lab in zip(predictions, labels, strict=True))
    fp = sum(p == "yes" and lab == "no" for p, lab in zip(predictions, labels, strict=True))
    tn = sum(p == "no" and lab == "no" for p, lab in zip(predictions, labels, strict=True))
    fn = sum(p == "no" and lab == "yes" for p, lab in zip(predictions, labels, strict=True))
    precision = tp / (tp + fp)
    recall = tp / (tp + fn)
    return {
        "accuracy": (tp + tn) / (tp + tn + fp + fn),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
        "yes_ratio": predictions.count("yes") / len(predictions),
    }


def pope_lmms_eval_score(reply: str, label: str) -> float:
    return 1.0 if reply.lower().strip() == label.lower().strip() else 0.0


def pope_lmms_eval_metrics(replies: list[str], labels: list[str]) -> dict[str, float]:
    """lmms-eval's aggregations: mean score; precision/recall on predictions equal to 'yes'/'no' exactly; F1; and
    its 'yes ratio', which counts the *labels* that are yes."""
    predictions = [r.lower().strip() for r in replies]
    golds = [lab.lower().strip() for lab in labels]
    tp = sum(p == "yes" and g == "yes" for p, g in zip(predictions, golds, strict=True))
    fp = sum(p == "yes" and g == "no" for p, g in zip(predictions, golds, strict=True))
    fn = sum(p == "no" and g == "yes" for p, g in zip(predictions, golds, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0
    recall = tp / (tp + fn) if tp + fn else 0
    return {
        "accuracy": sum(1.0 if p == g else 0.0 for p, g in zip(predictions, golds, strict=True)) / len(golds),
        "precision": precision,
        "recall": recall,
        "f1": 2 * (precision * recall) / (precision + recall) if precision + recall else 0,
        "yes_ratio": golds.count("yes") / (golds.count("yes") + golds.count("no")),
    }


# --- CountBench: lmms-eval tasks/countbench/utils.py ---------------------------------------------------------

COUNT_WORDS = [*SMALL_NUMBERS, "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"]
COUNT_WORDS += ["eighteen", "nineteen", "twenty"]


def count_normal(value: object) -> str:
    text = str(value).strip().lower()
    if text == "none":
        return "0"
    return str(COUNT_WORDS.index(text)) if text in COUNT_WORDS else text


def count_lmms_eval_score(reply: str, number: object) -> float:
    return 1.0 if count_normal(reply) == count_normal(number) else 0.0
