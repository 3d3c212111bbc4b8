"""safe_eval: what it computes, and that results keep Python's meaning."""
import math
import operator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent import UnsafeExpression, safe_eval


def check_eval(expr, expected):
    result = safe_eval(expr)
    assert result == expected, f"{expr!r} gave {result!r}, expected {expected!r}"
    assert type(result) is type(expected), f"{expr!r} gave {type(result).__name__}"


@pytest.mark.parametrize("expr, expected", [
    ("1+2*3", 7),
    ("2 * (3 + 4)", 14),
    ("17 * 23 + 4", 395),
    ("2**10 - 24", 1000),
    ("7 // 2", 3),
    ("-7 // 2", -4),
    ("7 % 3", 1),
    ("-(3)", -3),
    ("+3", 3),
    ("1_000 + 1", 1001),
    ("1e3", 1000.0),
    ("2.5 * 2", 5.0),
    ("0.1 + 0.2", 0.1 + 0.2),
    ("2 ** -1", 0.5),
    ("   42   ", 42),
])
def test_arithmetic(expr, expected):
    check_eval(expr, expected)


def test_exact_integer_division_stays_int():
    check_eval("(128*3+40)/4", 106)
    check_eval("10/4", 2.5)
    check_eval("10.0/5", 2.0)


@pytest.mark.parametrize("expr, expected", [
    ("sqrt(16)", 4.0),
    ("abs(-3)", 3),
    ("round(2.567, 2)", 2.57),
    ("round(2.5)", 2),
    ("min(3, 1, 2)", 1),
    ("max(3, 1, 2)", 3),
    ("floor(2.7)", 2),
    ("ceil(2.1)", 3),
    ("log10(1000)", 3.0),
    ("log(e)", 1.0),
    ("exp(0)", 1.0),
    ("sin(0)", 0.0),
    ("cos(0)", 1.0),
    ("tan(0)", 0.0),
    ("pi", math.pi),
    ("tau / 2", math.pi),
])
def test_whitelisted_functions_and_constants(expr, expected):
    check_eval(expr, expected)


def test_long_sum_is_not_deep_nesting():
    terms = "+".join(["1"] * 900)
    check_eval(terms, 900)


def test_long_flat_expressions_evaluate_however_many_terms():
    # Python's own parser refuses a chain of ~3,000 operators; the size cap is what bounds the work.
    check_eval("+".join(["2"] * 3000), 6000)
    check_eval("-".join(["1"] * 3000), -2998)
    check_eval("*".join(["1"] * 3000), 1)
    check_eval("2*3+" * 1500 + "0", 9000)
    check_eval("1 - 2 * -3 + 10 // 3 % 2 - 2 ** -1 + " * 200 + "0", 200 * 7.5)
    check_eval("(1 + 2) * 3 - sqrt(4) / 2 + " * 300 + "1", 300 * 8.0 + 1)


def test_hundred_levels_of_brackets_are_accepted():
    check_eval("(" * 100 + "1" + ")" * 100, 1)
    check_eval("1+(" * 100 + "1" + ")" * 100, 101)


def test_ten_thousand_characters_are_accepted():
    expr = "+".join(["1"] * 4000) + " " * (10_000 - 7999)
    assert len(expr) == 10_000
    check_eval(expr, 4000)


def test_long_flat_expression_keeps_the_precise_refusals():
    with pytest.raises(UnsafeExpression, match="name 'x' is not allowed"):
        safe_eval("1+" * 3000 + "x")
    with pytest.raises(UnsafeExpression, match="division by zero"):
        safe_eval("1+" * 3000 + "1/0")
    with pytest.raises(UnsafeExpression, match="nested"):
        safe_eval("1+" * 3000 + "-" * 3000 + "1")


def test_4300_digit_results_are_allowed():
    assert len(str(safe_eval("10**4299"))) == 4300
    with pytest.raises(UnsafeExpression, match="4300 digits"):
        safe_eval("10**4300")


@pytest.mark.parametrize("expr, words", [
    ("x + 1", "name 'x'"),
    ("sqrt", "must be called"),
    ("1 < 2", "comparisons"),
    ("True + 1", "booleans"),
    ("'a'", "strings"),
    ("1 << 2", "<<"),
    ("2 ^ 3", "use ** for powers"),
    ("1/0", "division by zero"),
    ("sqrt(-1)", "sqrt() failed"),
    ("1 +", "not a valid arithmetic expression"),
    ("", "not a valid arithmetic expression"),
    ("pi(2)", "calling pi is not allowed"),
    ("round(1.5, ndigits=1)", "keyword arguments"),
])
def test_rejections_name_the_offending_part(expr, words):
    with pytest.raises(UnsafeExpression, match=None) as info:
        safe_eval(expr)
    assert words in str(info.value)
    assert info.value.expression == expr


def test_unsafe_expression_is_a_value_error():
    with pytest.raises(ValueError):
        safe_eval("a")


def test_non_text_input_is_refused():
    with pytest.raises(UnsafeExpression, match="as text"):
        safe_eval(42)


_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "%": operator.mod, "//": operator.floordiv}
small = st.integers(min_value=-1000, max_value=1000)


@st.composite
def arithmetic(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        n = draw(small)
        return (f"({n})" if n < 0 else str(n)), n
    left_text, left = draw(arithmetic(depth=depth - 1))
    right_text, right = draw(arithmetic(depth=depth - 1))
    symbol = draw(st.sampled_from(sorted(_OPS) + ["/", "**"]))
    return f"({left_text} {symbol} {right_text})", (symbol, left, right)


def python_value(tree):
    if not isinstance(tree, tuple):
        return tree
    symbol, left, right = tree
    a, b = python_value(left), python_value(right)
    if symbol == "/":
        return a / b
    if symbol == "**":
        assume(abs(b) <= 50)  # larger powers are covered by the security tests
        value = a ** b
    else:
        value = _OPS[symbol](a, b)
    if isinstance(value, int) and abs(value) >= 10 ** 4300:
        raise OverflowError  # the calculator refuses a step this large, even when the end is small
    return value


@given(arithmetic())
def test_random_arithmetic_agrees_with_python(case):
    text, tree = case
    try:
        expected = python_value(tree)
    except (ZeroDivisionError, OverflowError, TypeError):
        with pytest.raises(UnsafeExpression):
            safe_eval(text)
        return
    if isinstance(expected, complex) or (isinstance(expected, float) and not math.isfinite(expected)):
        with pytest.raises(UnsafeExpression):
            safe_eval(text)
        return
    result = safe_eval(text)
    if isinstance(expected, float):
        assert result == pytest.approx(expected, rel=1e-12, abs=1e-300)
    else:
        assert result == expected and type(result) is int
