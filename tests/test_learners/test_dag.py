"""DAGClassifier: the adaptive sensor DAG as a budgeted scikit-learn classifier (spec 001)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris, load_wine
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import lattice
import polydom
from learners import SklearnLearner, sweep
from learners.budgeted.dag import DAGClassifier
from learners.budgeted.dag.subset_bank import BankEntry, SubsetBank
from learners.budgeted.dag.subset_selection import forward_prefixes, greedy_subsets
from tests.strategies import examples

WINE = {"chem": [0, 1, 2, 3, 4], "phenols": [5, 6, 7, 8], "colour": [9, 10, 11, 12]}


def _scaled_wine(n_columns):
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X)[:, :n_columns], y


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return train_test_split(X, y, test_size=0.33, stratify=y, random_state=0)


@pytest.fixture(scope="module")
def wine_dag(wine):
    Xtr, _, ytr, _ = wine
    return DAGClassifier(feature_groups=WINE, tradeoff=0.02, cv=3).fit(Xtr, ytr)


def _dag(**kw):
    return DAGClassifier(feature_groups=WINE, cv=3, **kw)


# ---- routing and cost (spec 6, items 4-7) ----
def test_training_risk_is_the_oof_error_plus_tradeoff_times_the_measured_cost(wine, wine_dag):
    Xtr, _, ytr, _ = wine
    final = wine_dag.route(Xtr)
    oof = wine_dag.bank_.losses(wine_dag.graph_.states, ytr)[np.arange(len(ytr)), final]
    measured = oof.mean() + 0.02 * wine_dag.prediction_cost(Xtr).mean()
    assert wine_dag.train_risk_ == pytest.approx(measured, rel=1e-12)
    wine_dag._check(Xtr, ytr)


def test_each_row_pays_exactly_the_sensors_of_its_final_state(wine, wine_dag):
    _, Xte, _, _ = wine
    usage = wine_dag.feature_usage(Xte)
    states = [wine_dag.graph_.states[k] for k in wine_dag.route(Xte)]
    for row, s in zip(usage, states, strict=True):
        assert {m for m, u in zip(WINE, row, strict=True) if u} == s
    np.testing.assert_allclose(wine_dag.prediction_cost(Xte), usage.sum(axis=1))
    assert usage.any() and not usage.all()


def test_prediction_is_the_final_states_classifier(wine, wine_dag):
    _, Xte, _, _ = wine
    final = wine_dag.route(Xte)
    pred = wine_dag.predict(Xte)
    for k in np.unique(final):
        rows = final == k
        model = wine_dag.bank_[wine_dag.graph_.states[k]].model
        cols = wine_dag.policy_.columns[k]
        np.testing.assert_array_equal(pred[rows], model.predict(Xte[rows][:, cols]))
    np.testing.assert_array_equal(
        wine_dag.classes_[wine_dag.predict_proba(Xte).argmax(axis=1)], pred
    )


def test_no_peeking_at_sensors_a_row_did_not_acquire(wine, wine_dag):
    _, Xte, _, _ = wine
    usage = wine_dag.feature_usage(Xte)
    noisy = Xte.copy()
    for j, cols in enumerate(WINE.values()):
        rows = ~usage[:, j]
        noisy[np.ix_(rows, cols)] = 1e6
    np.testing.assert_array_equal(wine_dag.route(noisy), wine_dag.route(Xte))
    np.testing.assert_array_equal(wine_dag.predict(noisy), wine_dag.predict(Xte))


def test_fit_is_deterministic(wine, wine_dag):
    Xtr, Xte, ytr, _ = wine
    again = _dag(tradeoff=0.02).fit(Xtr, ytr)
    np.testing.assert_array_equal(again.route(Xte), wine_dag.route(Xte))
    assert again.train_risk_ == wine_dag.train_risk_


# ---- the budget ----
def test_a_cost_above_one_per_sensor_acquires_nothing(wine):
    Xtr, Xte, ytr, _ = wine
    dag = _dag(tradeoff=1.01).fit(Xtr, ytr)
    assert not dag.feature_usage(Xte).any()
    assert not dag.used_features_.any()
    assert len(set(dag.predict(Xte))) == 1


def test_free_sensors_train_no_worse_than_the_full_model():
    # iris, 4 one-column sensors; the bank is not nested (some row a smaller set gets right
    # the full set gets wrong), so the DAG may beat the full model's out-of-fold error
    X, y = load_iris(return_X_y=True)
    dag = DAGClassifier(tradeoff=0.0, cv=3).fit(X, y)
    losses = dag.bank_.losses(dag.graph_.states, y)
    full = losses[:, -1].mean()
    assert dag.train_risk_ <= full + 1e-12
    final = dag.route(X)
    assert losses[np.arange(len(y)), final].mean() == pytest.approx(dag.train_risk_)


def test_zero_cost_with_the_full_set_right_where_others_err_acquires_everything(wine):
    # a bank whose out-of-fold predictions are right for the full set only, on every row
    Xtr, Xte, ytr, yte = wine
    first = _dag(tradeoff=0.0).fit(Xtr, ytr)
    full = frozenset(WINE)
    wrong = (ytr + 1) % 3
    bank = SubsetBank({s: BankEntry(first.bank_[s].model, ytr if s == full else wrong)
                       for s in first.graph_.states}, len(ytr))
    dag = _dag(tradeoff=0.0, bank=bank).fit(Xtr, ytr)
    assert dag.feature_usage(Xtr).all() and dag.feature_usage(Xte).all()
    assert dag.train_risk_ == 0.0
    full_model = first.bank_[full].model
    np.testing.assert_array_equal(dag.predict(Xte), full_model.predict(Xte))
    assert np.mean(dag.predict(Xte) != yte) == np.mean(full_model.predict(Xte) != yte)


def test_larger_tradeoffs_buy_fewer_sensors(wine):
    Xtr, Xte, ytr, _ = wine
    first = _dag(tradeoff=0.0).fit(Xtr, ytr)
    costs = [first.prediction_cost(Xte).mean()]
    for t in [0.01, 0.05, 0.2, 1.5]:
        dag = _dag(tradeoff=t, bank=first.bank_).fit(Xtr, ytr)
        costs.append(dag.prediction_cost(Xte).mean())
        assert dag.bank_fits_ == 0
    assert costs[0] > costs[-2] > costs[-1] == 0.0


def test_the_chain_equals_a_cascade_trained_directly(wine):
    Xtr, Xte, ytr, _ = wine
    order = ["colour", "phenols", "chem"]
    dag = _dag(tradeoff=0.03, graph="chain", subsets=[[m] for m in order]).fit(Xtr, ytr)
    # the cascade by hand: stage j stops (0) or acquires the next sensor (1)
    states = [frozenset(order[:j]) for j in range(4)]
    loss = dag.bank_.losses(states, ytr)
    cols = [[c for m in WINE if m in s for c in WINE[m]] for s in states]
    V = loss[:, 3]
    stages = {}
    for j in (2, 1):
        w_stop, w_go = loss[:, j], 0.03 + V  # unit cost per sensor
        label = (w_go < w_stop).astype(int)
        weight = np.abs(w_go - w_stop)
        keep = weight > 0
        if len(set(label[keep])) == 2:
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            w = weight[keep] / weight[keep].mean()
            model.fit(Xtr[keep][:, cols[j]], label[keep], logisticregression__sample_weight=w)
            go = model.predict(Xtr[:, cols[j]]) == 1
            stages[j] = model
        else:
            go = np.full(len(ytr), bool(label[keep][0]) if keep.any() else False)
            stages[j] = bool(go[0])
        V = np.where(go, w_go, w_stop)
    root_go = (0.03 + V).mean() < loss[:, 0].mean()
    assert dag.train_risk_ == pytest.approx(min((0.03 + V).mean(), loss[:, 0].mean()))
    final = np.zeros(len(Xte), dtype=int)
    if root_go:
        final[:] = 1
        for j in (1, 2):
            at = final == j
            m = stages[j]
            go = m if isinstance(m, bool) else m.predict(Xte[:, cols[j]]) == 1
            final[at & go] = j + 1
    np.testing.assert_array_equal(dag.route(Xte), final)


# ---- sensors sharing atoms: each atom paid once (edge = the atoms newly acquired) ----
SHARED = {"chem": ["lab", "chem_a"], "phenols": ["lab", "phen_a"], "colour": ["colour_a"]}
PRICES = {"lab": 0.6, "chem_a": 0.2, "phen_a": 0.3, "colour_a": 0.5}


def _paid_once(states, atoms, prices):
    """Cost of each state's sensors with every atom paid once (the test's own count)."""
    return np.array([sum(prices[a] for a in {a for m in s for a in atoms[m]}) for s in states])


def test_an_atom_shared_by_two_sensors_is_paid_once_in_training(wine):
    Xtr, Xte, ytr, _ = wine
    dag = _dag(tradeoff=0.02, feature_atoms=SHARED, atom_costs=PRICES).fit(Xtr, ytr)
    np.testing.assert_allclose(dag.feature_costs_, [0.8, 0.9, 0.5])
    states = [dag.graph_.states[k] for k in dag.route(Xtr)]
    measured = _paid_once(states, SHARED, PRICES)
    assert any({"chem", "phenols"} <= s for s in states)  # some row pays "lab" once for two
    np.testing.assert_allclose(dag.prediction_cost(Xtr), measured, rtol=1e-12)
    oof = dag.bank_.losses(dag.graph_.states, ytr)[np.arange(len(ytr)), dag.route(Xtr)]
    assert dag.train_risk_ == pytest.approx(oof.mean() + 0.02 * measured.mean(), rel=1e-12)
    dag._check(Xtr, ytr)
    # the policy's expected cost (its candidate's curve) = the measured mean on the rows
    model = polydom.CostModel({a: str(c) for a, c in PRICES.items()}, bundles=SHARED)
    assert dag.to_candidate(Xtr, ytr, model, "k").cost(1.0) == pytest.approx(measured.mean())
    arrays, meta = dag.to_arrays()
    back = DAGClassifier.from_arrays(arrays, json.loads(json.dumps(meta)))
    np.testing.assert_allclose(back.prediction_cost(Xte), dag.prediction_cost(Xte))


def test_a_sensor_whose_atoms_are_all_acquired_is_free(wine):
    Xtr, _, ytr, _ = wine
    atoms = {"chem": ["lab", "chem_a"], "phenols": ["lab"], "colour": ["colour_a"]}
    prices = {"lab": 1.0, "chem_a": 0.2, "colour_a": 0.5}
    tree = DecisionTreeClassifier(random_state=0)  # exact on the training rows
    dag = _dag(tradeoff=0.05, feature_atoms=atoms, atom_costs=prices,
               policy_estimator=tree).fit(Xtr, ytr)
    g, V = dag.graph_, dag.policy_.values
    chem, both = g.index(["chem"]), g.index(["chem", "phenols"])
    assert dag.state_costs_[both] == dag.state_costs_[chem] == pytest.approx(1.2)
    # V(chem) = min over its actions; the move to chem+phenols acquires nothing new
    sc = dag.bank_.losses(g.states, ytr)[:, chem]
    moves = [V[:, c] + 0.05 * (dag.state_costs_[c] - dag.state_costs_[chem])
             for c in g.children[chem]]
    np.testing.assert_allclose(V[:, chem], np.min([sc, *moves], axis=0), atol=1e-12)
    assert np.any(V[:, chem] == V[:, both])  # rows that take the free sensor pay nothing more


@settings(max_examples=examples(20), deadline=None)
@given(st.data())
def test_states_pay_each_atom_once_and_edges_the_atoms_newly_acquired(wine, data):
    # oracle: polydom.CostModel, the library's one home of "a set of names pays each atom once"
    Xtr, _, ytr, _ = wine
    pool = [f"a{j}" for j in range(5)]
    need = {m: data.draw(st.sets(st.sampled_from(pool), min_size=1), label=m) for m in WINE}
    used = sorted(set().union(*need.values()))
    prices = {a: data.draw(st.floats(0.01, 10.0), label=a) for a in used}
    dummy = DummyClassifier()
    dag = _dag(tradeoff=0.1, feature_atoms={m: sorted(v) for m, v in need.items()},
               atom_costs=prices, estimator=dummy, policy_estimator=dummy).fit(Xtr, ytr)
    model = polydom.CostModel({a: polydom.CostCurve([c]) for a, c in prices.items()},
                              bundles=need)
    g = dag.graph_
    for k, s in enumerate(g.states):
        assert dag.state_costs_[k] == pytest.approx(model.cost(s)(1.0))
        for c in g.children[k]:
            new = model.atoms_of(g.states[c]) - model.atoms_of(s)
            edge = dag.state_costs_[c] - dag.state_costs_[k]
            assert edge == pytest.approx(sum(prices[a] for a in new), abs=1e-12)
            assert (edge > 0) == bool(new)
    dag._check(Xtr, ytr)  # the reported risk is the routed path loss at these costs


def test_a_sweep_over_bundles_sharing_an_atom_trains_with_it_paid_once(wine):
    Xtr, Xte, ytr, yte = wine
    model = polydom.CostModel(
        {"lab": "0.5 + 0.1*n", "chem_a": "0.2", "phen_a": "0.1*n", "colour_a": "0.5"},
        bundles=SHARED,
    )
    cands = sweep(_dag(), [0.02], Xtr, ytr, model, evaluation=(Xte, yte), sizes=[1.0, 4.0])
    for cand, n in zip(cands, [1.0, 4.0], strict=True):
        dag = cand.payload.estimator
        prices = {a: float(c(n)) for a, c in model.atoms.items()}
        assert dag.atom_costs == pytest.approx(prices)
        states = [dag.graph_.states[k] for k in dag.route(Xtr)]
        measured = np.array([model.cost(s)(n) for s in states])
        oof = dag.bank_.losses(dag.graph_.states, ytr)[np.arange(len(ytr)), dag.route(Xtr)]
        assert dag.train_risk_ == pytest.approx(oof.mean() + 0.02 * measured.mean(), rel=1e-9)
        assert cand.cost(n) == pytest.approx(np.mean([model.cost(dag.graph_.states[k])(n)
                                                      for k in dag.route(Xte)]))


# ---- many sensors (Algorithm 2, forward prefixes; spec 6 item 16) ----
def test_greedy_subsets_respect_the_budget_and_take_the_best_step():
    X, y = _scaled_wine(5)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    cols = {f"x{j}": [j] for j in range(5)}
    est = LogisticRegression(max_iter=300)
    sel = greedy_subsets(est, Xa, ya, Xb, yb, cols, n_subsets=3, budget=4)
    assert sum(len(s) for s in sel.subsets) <= 4 == len(sel.steps)
    assert all(0 <= g <= 1 for g in sel.scores)
    # replay: every step attains the brute-force maximum of G, and G is recomputable
    sig = [frozenset()] * 3

    def correct(s):
        if not s:
            return yb == np.bincount(ya).argmax()
        c = sorted(int(m[1:]) for m in s)
        return LogisticRegression(max_iter=300).fit(Xa[:, c], ya).predict(Xb[:, c]) == yb

    for (i, m), g in zip(sel.steps, sel.scores, strict=True):
        best = max(
            np.mean(np.any([correct(sig[k] | ({f} if k == q else set())) for k in range(3)], 0))
            for q in range(3)
            for f in cols
            if f not in sig[q]
        )
        sig[i] = sig[i] | {m}
        got = np.mean(np.any([correct(s) for s in sig], axis=0))
        assert got == pytest.approx(g) == pytest.approx(best)


@pytest.mark.parametrize(
    ("costs", "winner"),
    [({"x0": 2.5, "x1": 0.5, "x2": 1.0, "x3": 2.0, "x4": 0.7}, "gain"),
     ({"x0": 2.6, "x1": 0.4, "x2": 0.6, "x3": 0.8, "x4": 0.5}, "gain per cost")],
)
def test_non_uniform_costs_keep_the_better_of_the_plain_and_the_per_cost_greedy(costs, winner):
    X, y = _scaled_wine(5)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    cols = {f"x{j}": [j] for j in range(5)}
    est = LogisticRegression(max_iter=300)

    def correct(s):
        if not s:
            return yb == np.bincount(ya).argmax()
        c = sorted(int(m[1:]) for m in s)
        return LogisticRegression(max_iter=300).fit(Xa[:, c], ya).predict(Xb[:, c]) == yb

    def G(sig):
        return float(np.mean(np.any([correct(s) for s in sig], axis=0)))

    finals = {}
    for rule in ("gain", "gain per cost"):
        sel = greedy_subsets(est, Xa, ya, Xb, yb, cols, 2, budget=3.0, costs=costs, rule=rule)
        assert sel.rule == rule
        assert sum(costs[m] for s in sel.subsets for m in s) <= 3.0 + 1e-12
        sig, spent, g = [frozenset()] * 2, 0.0, G([frozenset()] * 2)
        for (i, m), score in zip(sel.steps, sel.scores, strict=True):
            def value(q, f, sig=sig, g=g, rule=rule):
                new = [s | {f} if k == q else s for k, s in enumerate(sig)]
                return G(new) if rule == "gain" else (G(new) - g) / costs[f]
            best = max(value(q, f) for q in range(2) for f in cols
                       if f not in sig[q] and spent + costs[f] <= 3.0 + 1e-12)
            assert value(i, m) == pytest.approx(best)  # the step attains the rule's maximum
            sig = [s | {m} if k == i else s for k, s in enumerate(sig)]
            spent, g = spent + costs[m], G(sig)
            assert g == pytest.approx(score)
        finals[rule] = sel.final
        assert sel.final == pytest.approx(g)
    best = greedy_subsets(est, Xa, ya, Xb, yb, cols, 2, budget=3.0, costs=costs)
    assert best.final == max(finals.values())
    assert best.rule == winner == max(finals, key=finals.get)
    assert finals["gain"] != finals["gain per cost"]
    uniform = greedy_subsets(est, Xa, ya, Xb, yb, cols, 2, budget=3.0)
    assert uniform.rule == "gain"
    with pytest.raises(ValueError, match="rule"):
        greedy_subsets(est, Xa, ya, Xb, yb, cols, 2, budget=3.0, rule="cheapest")


def test_stop_on_zero_gain_stops_when_the_reward_saturates():
    X, y = load_iris(return_X_y=True)
    cols = {f"x{j}": [j] for j in range(4)}
    est = LogisticRegression(max_iter=300)
    free = greedy_subsets(est, X, y, X, y, cols, n_subsets=4, budget=12)
    stop = greedy_subsets(est, X, y, X, y, cols, n_subsets=4, budget=12, stop_on_zero_gain=True)
    assert len(stop.steps) < len(free.steps)
    assert stop.scores[-1] == free.scores[-1] == max(free.scores)
    assert all(b > a for a, b in zip(stop.scores, stop.scores[1:], strict=False))


def test_forward_prefixes_are_nested_and_within_budget():
    X, y = _scaled_wine(8)
    cols = {f"x{j}": [j] for j in range(8)}
    sel = forward_prefixes(LogisticRegression(max_iter=300), X, y, X, y, cols, 3, budget=6)
    assert [len(s) for s in sel.subsets] == sorted({len(s) for s in sel.subsets})
    assert all(a < b for a, b in zip(sel.subsets, sel.subsets[1:], strict=False))
    assert len(sel.subsets[-1]) == 6


@pytest.mark.parametrize("subsets", ["greedy", "forward"])
def test_many_sensor_dags_are_built_over_selected_subsets_plus_all(subsets):
    X, y = _scaled_wine(8)
    est = LogisticRegression(max_iter=300)
    dag = DAGClassifier(subsets=subsets, n_subsets=2, subset_budget=3, tradeoff=0.01, cv=3,
                        estimator=est, policy_estimator=est)
    dag.fit(X, y)
    assert dag.blocks_[-1] == frozenset(f"x{j}" for j in range(8))
    assert dag.selection_ is not None and len(dag.blocks_) <= 3
    dag.graph_._check()
    assert dag.feature_usage(X).shape == (len(y), 8)


# ---- bad input ----
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"feature_groups": {"a": [0, 1], "b": []}}, "'b'.* no columns"),
        ({"feature_groups": {"a": [0, 1], "b": [1, 2]}}, "column 1"),
        ({"feature_costs": {"chem": 1, "phenols": 1, "colour": 1, "smell": 2}}, "smell"),
        ({"feature_costs": {"chem": 1, "phenols": -1, "colour": 1}}, "phenols"),
        ({"feature_costs": [1.0, 2.0]}, "one value per sensor"),
        ({"subsets": [["chem"], ["taste"]]}, "taste"),
        ({"subsets": [["chem"], []]}, r"subsets\[1\] is empty"),
        ({"tradeoff": -0.1}, "tradeoff"),
        ({"graph": "tree"}, "graph"),
        ({"feature_atoms": SHARED}, "atom_costs"),
        ({"feature_atoms": {"chem": ["lab"], "phenols": ["lab"]}, "atom_costs": PRICES},
         "missing.*colour"),
        ({"feature_atoms": {**SHARED, "colour": []}, "atom_costs": PRICES},
         r"feature_atoms\['colour'\] is empty"),
        ({"feature_atoms": {**SHARED, "colour": ["dye"]}, "atom_costs": PRICES}, "dye"),
        ({"feature_atoms": SHARED, "atom_costs": {**PRICES, "lab": -1}}, "lab"),
        ({"feature_atoms": SHARED, "atom_costs": {**PRICES, "spare": 1}}, "spare"),
        ({"feature_atoms": SHARED, "atom_costs": PRICES,
          "feature_costs": {"chem": 0.8, "phenols": 0.9, "colour": 0.4}}, "colour"),
    ],
)
def test_bad_parameters_raise_value_errors_naming_them(wine, params, match):
    Xtr, _, ytr, _ = wine
    kw = {"feature_groups": WINE, "cv": 3, **params}
    with pytest.raises(ValueError, match=match):
        DAGClassifier(**kw).fit(Xtr, ytr)


def test_too_many_blocks_for_a_full_dag_are_refused(wine):
    Xtr, _, ytr, _ = wine
    with pytest.raises(ValueError, match="blocks"):
        DAGClassifier(cv=3).fit(Xtr, ytr)  # 13 one-column sensors


# ---- the contract: storage, sweep, on-demand ----
def test_to_arrays_round_trips_without_pickle(wine, wine_dag):
    _, Xte, _, _ = wine
    arrays, meta = wine_dag.to_arrays()
    json.dumps(meta)
    assert all(a.dtype != object for a in arrays.values())
    back = DAGClassifier.from_arrays(arrays, json.loads(json.dumps(meta)))
    np.testing.assert_array_equal(back.predict(Xte), wine_dag.predict(Xte))
    np.testing.assert_array_equal(back.feature_usage(Xte), wine_dag.feature_usage(Xte))
    np.testing.assert_array_equal(back.used_features_, wine_dag.used_features_)


def test_sweep_trains_the_bank_once_and_gives_expected_cost_curves(wine):
    Xtr, Xte, ytr, yte = wine
    costs = {"chem": "1 + n", "phenols": "2", "colour": "0.5*n"}
    cands = sweep(_dag(), [0.0, 0.01, 0.1, 2.0], Xtr, ytr, costs, evaluation=(Xte, yte))
    assert [c.key for c in cands][1] == "dag(tradeoff=0.01, n=1)"
    model = cands[1].payload.estimator
    assert model.bank_fits_ == 0
    usage = model.feature_usage(Xte)
    expected = sum(p * {"chem": 1 + 3.0, "phenols": 2.0, "colour": 1.5}[m]
                   for m, p in zip(WINE, usage.mean(axis=0), strict=True))
    assert cands[1].cost(3.0) == pytest.approx(expected)
    assert cands[-1].cost(3.0) == 0.0
    assert {c.learner for c in cands} == {"dag"}
    assert set(cands[1].needs) <= set(WINE)


def test_sweep_over_a_cost_model_takes_its_atoms_as_sensors(wine):
    Xtr, Xte, ytr, yte = wine
    model = polydom.CostModel({"chem": "1 + n", "phenols": "2", "colour": "0.5*n"},
                              columns=WINE)
    cands = sweep(DAGClassifier(cv=3), [0.01, 0.1], Xtr, ytr, model, evaluation=(Xte, yte))
    dag = cands[0].payload.estimator
    assert dag.feature_groups_ == WINE
    p = dag.feature_usage(Xte).mean(axis=0)
    assert cands[0].needs == {m: pytest.approx(q) for m, q in zip(WINE, p, strict=True)
                              if q > 0 or dag.used_features_[list(WINE).index(m)]}
    assert cands[0].cost(3.0) == pytest.approx(model.expected_cost(cands[0].needs)(3.0))


class Sensors:
    """Computes wine sensors from a row and records which were asked for."""

    def __init__(self):
        self.asked = []

    def compute(self, item, name):
        self.asked.append(name)
        return item[WINE[name]]


def test_predict_item_computes_only_the_acquired_sensors_in_policy_order(wine, wine_dag):
    _, Xte, _, _ = wine
    usage, pred = wine_dag.feature_usage(Xte), wine_dag.predict(Xte)
    proba = wine_dag.predict_proba(Xte)
    for i in range(0, len(Xte), 7):
        f = Sensors()
        out = wine_dag.predict_item(Xte[i], f)
        assert set(f.asked) == {m for m, u in zip(WINE, usage[i], strict=True) if u}
        assert out.computed == tuple(f.asked) and set(out.feature_seconds) == set(f.asked)
        assert out.label == pred[i]
        np.testing.assert_allclose(out.proba, proba[i])


# ---- reuse of the lattice's expansions ----
def test_a_dag_after_a_lattice_build_trains_only_missing_subsets_and_matches(wine):
    Xtr, Xte, ytr, _ = wine
    interleaved = {"odd": [1, 3, 5, 7, 9, 11], "even": [0, 2, 4, 6], "rest": [8, 10, 12]}
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    learner = SklearnLearner(est, Xtr, ytr, features=interleaved, cv=5)
    exp = lattice.explore({m: "1" for m in interleaved}, learner, alpha=1.05)
    fresh = DAGClassifier(feature_groups=interleaved, tradeoff=0.02, estimator=est)
    fresh.fit(Xtr, ytr)
    reused = DAGClassifier(feature_groups=interleaved, tradeoff=0.02, estimator=est,
                           bank=exp.expanded).fit(Xtr, ytr)
    missing = 8 - len(exp.expanded)
    assert reused.bank_fits_ == 6 * missing < fresh.bank_fits_ == 6 * 8
    np.testing.assert_array_equal(reused.route(Xte), fresh.route(Xte))
    np.testing.assert_array_equal(reused.predict(Xte), fresh.predict(Xte))


def test_a_bank_from_another_data_set_is_refused(wine, wine_dag):
    Xtr, _, ytr, _ = wine
    with pytest.raises(ValueError, match="rows"):
        _dag(bank=wine_dag.bank_).fit(Xtr[:50], ytr[:50])
    assert isinstance(wine_dag.bank_, SubsetBank)


@pytest.mark.parametrize("mode", ["greedy", "forward"])
def test_a_bank_reuses_the_block_selection_it_holds(mode):
    """Thirteen one-column sensors (more than MAX_BLOCKS) through the selection modes: a
    second fit given the first's bank (a tradeoff sweep) takes the held selection instead of
    selecting again, and the same blocks; other selection settings select anew."""
    X, y = _scaled_wine(13)
    groups = {f"s{j}": [j] for j in range(13)}
    kw = dict(feature_groups=groups, subsets=mode, n_subsets=3, subset_budget=4.0, cv=3,
              estimator=LogisticRegression(max_iter=300))
    first = DAGClassifier(tradeoff=0.01, **kw).fit(X, y)
    again = DAGClassifier(tradeoff=0.1, bank=first.bank_, **kw).fit(X, y)
    assert again.selection_ is first.selection_
    assert again.blocks_ == first.blocks_
    assert again.bank_.fits == 0 < first.bank_.fits         # no state model trained again
    other = DAGClassifier(tradeoff=0.1, bank=first.bank_, **dict(kw, n_subsets=2)).fit(X, y)
    assert other.selection_ is not first.selection_
    assert len(other.selection_.subsets) <= 2
