"""The number a short LaTeX answer stands for, as MathVision's standard evaluation computes it.

MathVision's ``is_equal`` (lmms-eval ``tasks/mathvision/eval_utils.py``) turns an answer into a SymPy expression
with ``latex2sympy2`` (which keeps it unevaluated), prints it, and evaluates the printed text with Python's
arithmetic and the ``math`` module's functions; two answers are equal when those numbers agree to two decimals.
``latex2sympy2`` cannot be installed beside Hydra (it pins an older ANTLR runtime), so :func:`latex_value` reads the
same LaTeX with a small parser of its own and computes what that evaluation computes:

- integers stay Python integers, ``/`` and ``\\frac`` are true division, ``^`` groups to the left (``2^3^2`` is 64),
  juxtaposition multiplies (``2\\sqrt{3}``, ``\\frac{1}{2}\\pi``), ``:`` divides, ``!`` is the factorial;
- a decimal is an exact fraction (``3.0`` is the integer 3, ``0.125`` is ``1/8``), ``1,000`` is one thousand (a
  comma before exactly three digits), ``\\%`` divides by 100, a prime mark is dropped;
- ``\\pi``, ``e^{x}`` (``exp``), ``\\sqrt``, ``\\sqrt[n]``, ``\\sin``... ``\\arctan``, ``\\sinh``..., ``\\log``
  (base 10, or ``\\log_{b}``), ``\\exp``, ``\\binom`` and ``\\lfloor``/``\\floor`` have their ``math`` values,
  except where SymPy evaluates first (``\\exp(0)`` is the integer 1, ``\\exp(1)`` is ``E``, ``\\binom{5}{2}`` is 10);
- the parser stops, as the reference's does, at a token that cannot continue the expression (``3.)`` is 3; a
  subscript on a number ends it: ``5_{2}`` is 5, one after a power is passed over: ``2^{3}_{2}+1`` is 9), and fails
  at a character the grammar has no token for (``3?``);
- what that evaluation cannot turn into a number is ``None``: a letter (a SymPy symbol: ``x``, ``e`` alone, ``cm``),
  ``\\infty``, ``\\ln`` (printed ``log(x, E)``), ``|x|``, ``\\lceil``, ``\\sec``, a list (``1,5``), a complex or
  failing result (``\\sqrt{-1}``, ``1/0``), and any text the grammar does not parse.

One leniency, because the reference would not finish: a power or factorial whose result would exceed
:data:`MAX_DIGITS` digits is ``None``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction

Number = int | float
MAX_DIGITS = 4000
"""Integer results longer than this are not computed (:func:`latex_value` gives ``None``)."""

_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:(?:\d+(?:,\d{3})*)?\.\d+|\d+(?:,\d{3})*)(?:\\%)?)|(?P<command>\\[a-zA-Z]+|\\[{}%|,;! ])"
    r"|(?P<char>[a-zA-Z+\-*/(){}\[\]|'&_^:;,.=<>!\\])|(?P<invalid>\S))"
)
"""A token: a number (``1,000``: a comma before exactly three digits), a command, a character of the grammar, or a
character it has no token for (``?``, ``%``, ``π``...). ``$`` and ``~`` are spaces."""
INVALID = "\x00"
"""Stands for a character the grammar has no token for: the reference fails where it reads one."""
_FAILS = {",", ";", "=", "\\%", INVALID}
"""Tokens after the leading expression that make the reference fail (a list, an equation, a misplaced percent sign,
a character without a token); after any other the reference stops without an error."""
_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "arcsin": math.asin,
    "arccos": math.acos,
    "arctan": math.atan,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "exp": math.exp,
}
_COMMANDS = {
    "\\" + name
    for name in [
        "times",
        "cdot",
        "div",
        "frac",
        "dfrac",
        "tfrac",
        "binom",
        "sqrt",
        "pi",
        "log",
        "ln",
        "exp",
        "sin",
        "cos",
        "tan",
        "csc",
        "sec",
        "cot",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "lfloor",
        "rfloor",
        "lceil",
        "rceil",
        "floor",
        "ceil",
        "left",
        "right",
        "infty",
    ]
}
"""Commands the reference's lexer knows among those an answer uses (others fail wherever they are read)."""
_SPACES = {"\\,", "\\;", "\\!", "\\ "}
_TIMES = {"*", "\\cdot", "\\times"}
_DIVIDE = {"/", "\\div", ":"}


class _Unreadable(Exception):
    """The reference's evaluation fails on this text (a parse error, a symbol, a Python error)."""


class _E:
    """Euler's number as the parser meets it: only ``e^{x}`` (SymPy's ``exp(x)``) has a value."""


def _digits_ok(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_DIGITS * 3.33:
        raise _Unreadable("too large")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        text = text.replace("$", " ").replace("~", " ")
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:  # only white space is left
                break
            token = match.group("number") or match.group("command") or match.group("char") or INVALID
            position = match.end()
            if match.group("command") and token not in _COMMANDS:
                # the lexer takes the longest command it knows and reads the rest as letters: \\cdotx is \\cdot x
                known = max((c for c in _COMMANDS if token.startswith(c)), key=len, default=token)
                position -= len(token) - len(known)
                token = known
            if token not in _SPACES:
                self.tokens.append(token)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise _Unreadable(f"expected {expected}")
        self.at += 1
        return token

    def whole(self) -> Number:
        """The value of the text's longest leading expression: the reference's parser stops, without an error, at a
        token that cannot continue it (``3.)``, ``12)(``) and reads no further."""
        value = _number(self.expression())
        if self.peek() in ("<", ">"):  # a relation: Python compares, and round() makes the bool an integer
            relation = self.take()
            right = _number(self.expression())
            value = int(value < right if relation == "<" else value > right)
        if self.peek() in _FAILS:
            raise _Unreadable("a list, an equation, or a character without a token")
        return value

    def expression(self) -> Number | type[_E]:
        value = self.term()
        while self.peek() in ("+", "-"):
            sign = self.take()
            right = _number(self.term())
            value = _number(value) + right if sign == "+" else _number(value) - right
        return value

    def term(self) -> Number | type[_E]:
        value = self.unary()
        while self.peek() in _TIMES | _DIVIDE:
            operator = self.take()
            right = _number(self.unary())
            value = _number(value) * right if operator in _TIMES else _divide(_number(value), right)
        return value

    def unary(self) -> Number | type[_E]:
        if self.peek() in ("+", "-"):
            sign = self.take()
            value = _number(self.unary())
            return value if sign == "+" else -value
        factors = [self.postfix()]
        while self._starts_factor():
            factors.append(self.postfix())
        if len(factors) == 1:
            return factors[0]
        product: Number = 1
        for factor in factors:
            product = product * _number(factor)
        return product

    def _starts_factor(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        if (
            token[0].isdigit()
            or (token[0] == "." and len(token) > 1)
            or token.isalpha()
            or token in ("(", "[", "{", "\\{", "|", INVALID)
        ):
            return True
        return token.startswith("\\") and token[1:] not in {"cdot", "times", "div", "%", "right", "rfloor", "}"}

    def postfix(self) -> Number | type[_E]:
        value = self.power()
        while self.peek() in ("!", "'"):
            if self.take() == "!":
                number = _number(value)
                if isinstance(number, float) or number > 3000:
                    raise _Unreadable("factorial")
                value = math.factorial(number)
        return value

    def power(self) -> Number | type[_E]:
        value = self.component()
        raised = of_e = False
        while self.peek() == "^":
            self.take()
            exponent = _number(self.exponent())
            raised = True
            if value is _E:
                if exponent == 1 and isinstance(exponent, int):  # SymPy's E**1 is E, which math does not name
                    raise _Unreadable("E")
                value, of_e = _apply(math.exp, exponent), True
            else:
                value = _power(_number(value), exponent)
            if self.peek() == "_":
                if of_e:
                    raise _Unreadable("a subscript after a power of e")
                self.skip_subscript()  # after a power the reference reads past it: 2^{3}_{2}+1 is 9
        if self.peek() == "_" and not raised:
            self.at = len(self.tokens)  # the reference's parse ends at a subscript on a number
        return value

    def skip_subscript(self) -> None:
        """Pass over a subscript as the grammar reads one: ``_{...}`` (its contents are not read), ``_2`` or a letter
        (itself subscripted or not: ``_x_{1}``); anything else (``_e``, ``_\\log``, ``_[``) fails."""
        self.take("_")
        token = self.take()
        if token == "{":
            depth = 1
            while depth:
                token = self.take()
                depth += (token == "{") - (token == "}")
        elif len(token) == 1 and token.isalpha() and token != "e":
            if self.peek() == "_":
                self.skip_subscript()
        elif not (token[0].isdigit() or token[0] == "."):
            raise _Unreadable("a subscript the grammar does not read")

    def exponent(self) -> Number | type[_E]:
        """What ``^`` raises to: a braced expression or one atom (``2^10`` is 1024: the whole number)."""
        return self.braced() if self.peek() == "{" else self.atom()

    def braced(self) -> Number | type[_E]:
        self.take("{")
        value = self.expression()
        self.take("}")
        return value

    def component(self) -> Number | type[_E]:
        token = self.peek()
        if token == "\\left":
            self.take()
            opening = self.take()
            if opening not in ("(", "[", "\\{"):
                raise _Unreadable("\\left")
            value = self.expression()
            self.take("\\right")
            self.take({"(": ")", "[": "]", "\\{": "\\}"}[opening])
            return value
        if token in ("(", "[", "\\{"):
            closing = {"(": ")", "[": "]", "\\{": "\\}"}[self.take()]
            value = self.expression()
            if self.peek() == ",":
                raise _Unreadable("a list")
            self.take(closing)
            return value
        if token == "{":
            return self.braced()
        if token in ("|", "\\lceil", "\\ceil"):
            raise _Unreadable("no math name for Abs or ceiling")
        if token in ("\\lfloor", "\\floor"):
            return self.floor()
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            self.take()
            numerator = _number(self.braced())
            return _divide(numerator, _number(self.braced()))
        if token == "\\binom":
            self.take()
            top = _number(self.braced())
            return _binomial(top, _number(self.braced()))
        if token == "\\sqrt":
            return self.root()
        if token == "\\log":
            return self.logarithm()
        if token is not None and token[1:] in _FUNCTIONS and token[0] == "\\":
            self.take()
            name, argument = token[1:], _number(self.argument())
            if name == "exp" and isinstance(argument, int) and argument in (0, 1):
                if argument == 1:  # SymPy's exp(1) is E, which math does not name
                    raise _Unreadable("E")
                return 1  # SymPy's exp(0) is the integer 1
            return _apply(_FUNCTIONS[name], argument)
        return self.atom()

    def atom(self) -> Number | type[_E]:
        token = self.take()
        if token[0].isdigit() or (token[0] == "." and len(token) > 1):
            return _literal(token)
        if token == "\\pi":
            return math.pi
        if token == "e":
            return _E
        raise _Unreadable("a symbol or an unknown command")

    def floor(self) -> Number:
        opening = self.take()
        if opening == "\\floor":
            return math.floor(_number(self.braced()))
        value = _number(self.expression())
        self.take("\\rfloor")
        return math.floor(value)

    def root(self) -> Number:
        self.take("\\sqrt")
        if self.peek() == "[":
            self.take()
            degree = _number(self.expression())
            self.take("]")
            return _power(_number(self.braced()), _divide(1, degree))
        return _apply(math.sqrt, _number(self.braced()))

    def logarithm(self) -> Number:
        self.take("\\log")
        base: Number = 10
        if self.peek() == "_":
            self.take()
            base = _number(self.exponent())  # \\log_2{8}: one token or a braced expression
            if self.peek() is None:
                raise _Unreadable("log without an argument")
        value = _number(self.argument())
        try:
            return math.log(value, base)
        except (ValueError, ZeroDivisionError, TypeError) as error:
            raise _Unreadable("log") from error

    def argument(self) -> Number | type[_E]:
        """A function's argument: ``(x)``, or the product or quotient that follows without parentheses (``\\sin30``,
        ``\\cos3:\\pi`` is the cosine of 3/pi, ``\\log_{2}{8}\\div2`` the logarithm of 4)."""
        if self.peek() == "(":
            return self.component()
        return self.term()


def _literal(token: str) -> Number:
    """A number token's value; ``\\%`` written right after the digits divides it by 100."""
    digits = token.replace(",", "")
    if digits.endswith("\\%"):
        return _exact(Fraction(digits[:-2]) / 100)
    return _exact(Fraction(digits))


def _exact(value: Fraction) -> Number:
    """A decimal as SymPy prints it and Python evaluates the print: an integer, or ``p/q`` divided."""
    return value.numerator if value.denominator == 1 else value.numerator / value.denominator


def _number(value: Number | type[_E]) -> Number:
    if value is _E or not isinstance(value, int | float):
        raise _Unreadable("E")
    return value


def _divide(left: Number, right: Number) -> Number:
    try:
        return left / right
    except (ZeroDivisionError, OverflowError) as error:
        raise _Unreadable("division") from error


def _power(base: Number, exponent: Number) -> Number:
    big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if big and exponent * math.log10(abs(base)) > MAX_DIGITS:
        raise _Unreadable("too large")
    try:
        result = base**exponent
    except (ZeroDivisionError, OverflowError) as error:
        raise _Unreadable("power") from error
    if isinstance(result, complex):
        raise _Unreadable("complex")
    return _digits_ok(result)


def _binomial(top: Number, bottom: Number) -> Number:
    """SymPy's ``binomial``, which it evaluates: an integer for integers, else the falling factorial over k! (k a
    whole number) or the gamma function's quotient."""
    if isinstance(top, int) and isinstance(bottom, int):
        if top > 3000:
            raise _Unreadable("binomial")
        return math.comb(top, bottom) if bottom >= 0 else 0
    if isinstance(bottom, int) or float(bottom).is_integer():
        whole = int(bottom)
        if not 0 <= whole <= 3000:
            raise _Unreadable("binomial")
        return _apply(lambda n: math.prod(n - i for i in range(whole)) / math.factorial(whole), top)
    return _apply(lambda n: math.gamma(n + 1) / (math.gamma(bottom + 1) * math.gamma(n - bottom + 1)), top)


def _apply(function: Callable[[float], float], value: Number) -> float:
    try:
        return function(value)
    except (ValueError, OverflowError) as error:
        raise _Unreadable("math domain") from error


def latex_value(text: str) -> Number | None:
    """The number ``text`` evaluates to as MathVision's reference evaluates it (see the module docstring), or
    ``None`` where that evaluation fails."""
    try:
        return _Parser(text).whole()
    except (_Unreadable, RecursionError, OverflowError, ValueError, TypeError):
        return None
