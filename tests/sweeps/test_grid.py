"""A sweep's grid and the spread across seeds."""

import math

import pytest

import serq
from serq.sim.stats import T_975_19
from serq.sweeps import grid as G
from serq.tables.spread import spread, t_quantile


def test_values_split_at_the_commas_outside_parentheses():
    assert G.split_values("0.3,0.6, 0.9") == ["0.3", "0.6", "0.9"]
    assert G.split_values("min(1,2),3") == ["min(1,2)", "3"]
    assert G.cli_sets(("Lambda=0.3,0.6", "B=2048")) == {"Lambda": ["0.3", "0.6"], "B": ["2048"]}


def test_bad_value_lists():
    def msg(f, *a):
        with pytest.raises(serq.SerqError) as e:
            f(*a)
        return e.value.render()
    assert msg(G.cli_sets, ("B=1", "B=2")) == ("error[E970]: --set B is given twice\n"
                                                "  = help: give its values once: --set B=a,b,c")
    assert msg(G.value_lists, {"B": ["1", ""]}) == "error[E970]: the input B is given an empty text"
    assert msg(G.value_lists, {"B": [2048, 2048]}) == "error[E970]: the input B is given the value 2048 twice"
    assert msg(G.value_lists, {"B": []}) == "error[E970]: the input B is given no values"
    assert msg(G.value_lists, {"seed": [1]}).startswith("error[E970]: an input named `seed`")


def test_seeds():
    assert G.parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert G.parse_seeds("1,3,7") == [1, 3, 7]
    assert G.parse_seeds("1-3,10") == [1, 2, 3, 10]
    assert G.parse_seeds(range(1, 4)) == [1, 2, 3]
    with pytest.raises(serq.SerqError) as e:
        G.parse_seeds("5-1")
    assert e.value.render() == "error[E970]: --seeds 5-1: the range 5-1 is empty\n  = help: --seeds 1-5"
    with pytest.raises(serq.SerqError) as e:
        G.parse_seeds("1,1")
    assert e.value.render() == "error[E970]: seed 1 is given twice"
    with pytest.raises(serq.SerqError) as e:
        G.parse_seeds(5)
    assert e.value.render() == ("error[E970]: seeds=5: give the seeds themselves\n"
                                "  = help: seeds=range(1, 6) or seeds=\"1-5\"")
    with pytest.raises(serq.SerqError, match="`x` is not a seed or a range"):
        G.parse_seeds("1,x")
    # a seed is below 2^64 (seed 2^64 would be seed 0's runs under another name)
    assert G.parse_seeds([2 ** 64 - 1]) == [2 ** 64 - 1]
    with pytest.raises(serq.SerqError) as e:
        G.parse_seeds("1-3,18446744073709551616")
    assert e.value.render() == ("error[E970]: --seeds 1-3,18446744073709551616: 18446744073709551616 is not a "
                                "seed (a whole number from 0 to 2^64 − 1)")
    with pytest.raises(serq.SerqError) as e:
        G.parse_seeds([1, 2 ** 64])
    assert e.value.render() == ("error[E970]: seeds=: '18446744073709551616' is not a seed (a whole number "
                                "from 0 to 2^64 − 1)")


def test_points_vary_the_first_input_slowest():
    assert G.points({"a": ["1", "2"], "b": ["x", "y"]}) == [
        {"a": "1", "b": "x"}, {"a": "1", "b": "y"}, {"a": "2", "b": "x"}, {"a": "2", "b": "y"}]
    assert G.points({}) == [{}]
    assert [G.column_value(t) for t in ("2048", "0.3", "1e-07", "2 * B")] == [2048, 0.3, 1e-07, "2 * B"]


def test_student_t_quantiles():
    # t(0.975, 19) is the simulator's batch-means constant; the others are tabulated
    assert t_quantile(0.975, 19) == pytest.approx(T_975_19, rel=1e-13)
    assert t_quantile(0.975, 1) == pytest.approx(12.706204736174698, rel=1e-12)
    assert t_quantile(0.975, 4) == pytest.approx(2.7764451051977934, rel=1e-12)
    assert t_quantile(0.995, 2) == pytest.approx(9.924843200918293, rel=1e-12)
    assert t_quantile(0.975, 30) == pytest.approx(2.0422724563012373, rel=1e-12)
    assert t_quantile(0.975, 120) == pytest.approx(1.9799304050824413, rel=1e-12)


def test_spread_across_seeds():
    s = spread([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s.n, s.mean, s.min, s.max, s.missing) == (5, 3.0, 1.0, 5.0, 0)
    assert s.half == pytest.approx(2.7764451051977934 * math.sqrt(2.5 / 5), rel=1e-12)
    s = spread([2.0, float("nan")])
    assert (s.n, s.mean, s.missing) == (1, 2.0, 1) and math.isnan(s.half)
