"""A build's cost model as rows, stated once: what :func:`storage.builds.begin_build`
writes (``features``, ``feature_costs``, ``bundles``, ``bundle_atoms``, and for a model
with shared steps or a start ``cost_steps`` / ``cost_step_users``), what a reader makes of
them, and the digest a build's seal header holds of them.

The step tables enter the digest only when a build has rows there, so the digest of a
build without steps and start is what it was before they existed (its seal still
verifies), and a build with them cannot lose them unnoticed: their rows are sealed.

The writer's digest comes from the rows it writes (:func:`cost_model_rows`), the reader's
from the rows it reads, with the same columns (:data:`DIGESTED`): a cost model that
verifies is the one that was published.  A reader reads each of these tables once and
gets the model and the digest from the same rows (:func:`read_cost_model`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import START, CostModel
from polydom.errors import InvalidArgumentError
from storage import schema as S
from storage.codec import canonical_json, cost_expression, stored_curve
from storage.database import Database
from storage.seal import rows_digest

__all__ = [
    "DIGESTED",
    "STEP_TABLES",
    "StoredCostModel",
    "atom_order",
    "cost_model_digest",
    "cost_model_rows",
    "feature_order",
    "lattice_order",
    "read_cost_model",
]

#: The columns of each cost model table the seal header's digest covers (the bundle tables
#: from schema version 2 on).
DIGESTED: dict[str, tuple[str, ...]] = {
    "features": ("feature_id", "name", "columns", "cost", "degree"),
    "feature_costs": ("feature_id", "degree", "coefficient"),
    "bundles": ("bundle_id", "name"),
    "bundle_atoms": ("bundle_id", "feature_id"),
    "cost_steps": ("step_id", "name", "cost", "degree", "coefficients"),
    "cost_step_users": ("step_id", "feature_id"),
}

#: The tables of a model's shared steps and start: added tables (a store may lack them),
#: digested only when they hold rows of the build.
STEP_TABLES = ("cost_steps", "cost_step_users")


@dataclass(frozen=True)
class StoredCostModel:
    """A build's cost model and the digest of its rows (:func:`cost_model_digest`)."""

    model: CostModel
    digest: str


def cost_model_rows(build_id: int, model: CostModel) -> dict[str, list[dict[str, Any]]]:
    """The rows of ``model`` (atoms with columns, bundles), table by table, as
    :func:`storage.builds.begin_build` writes them: atoms in order (``feature_id``), their
    coefficients by degree, bundles in order, each bundle's atoms in atom order.

    Runtime complexity: O(atoms * degree + bundle members).
    """
    curves = model.atoms
    names = list(curves)
    cols = model.columns
    return {
        "features": [
            {"build_id": build_id, "feature_id": i, "name": name,
             "columns": canonical_json(cols[name]), "cost": cost_expression(curves[name]),
             "degree": curves[name].degree}
            for i, name in enumerate(names)],
        "feature_costs": [
            {"build_id": build_id, "feature_id": i, "degree": k, "coefficient": c}
            for i, name in enumerate(names)
            for k, c in enumerate(curves[name].coefficients.tolist())],
        "bundles": [{"build_id": build_id, "bundle_id": j, "name": name}
                    for j, name in enumerate(model.bundles)],
        "bundle_atoms": [
            {"build_id": build_id, "bundle_id": j, "feature_id": i}
            for j, members in enumerate(model.bundles.values())
            for i in sorted(names.index(a) for a in members)],
        **_step_rows(build_id, model, names),
    }


def _step_rows(build_id: int, model: CostModel,
               names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Rows of the model's shared steps (in order) and its start (last, named START)."""
    steps: list[tuple[str, CostCurve]] = list(model.steps.items())
    if model.start is not None:
        steps.append((START, model.start))
    uses = model.uses
    position = {name: i for i, name in enumerate(names)}
    return {
        "cost_steps": [
            {"build_id": build_id, "step_id": j, "name": name, "cost": cost_expression(curve),
             "degree": curve.degree,
             "coefficients": canonical_json(curve.coefficients.tolist(), "a step's curve")}
            for j, (name, curve) in enumerate(steps)],
        "cost_step_users": [
            {"build_id": build_id, "step_id": j, "feature_id": i}
            for j, (name, _) in enumerate(steps)
            for i in sorted(position[a] for a, used in uses.items() if name in used)],
    }


def cost_model_digest(rows: Mapping[str, Sequence[Mapping[str, Any]]],
                      schema_version: int) -> str:
    """sha256 over a build's cost model rows (:data:`DIGESTED` columns of each table; the
    bundle tables from schema version 2 on), as the seal header holds it.  ``rows`` maps a
    table name to its rows (written or read).

    Runtime complexity: O(R log R) for R rows.
    """
    tables = [t for t in DIGESTED if (schema_version >= 2 or not t.startswith("bundle"))
              and (t not in STEP_TABLES or rows.get(t))]
    return rows_digest({t: [tuple(r[c] for c in DIGESTED[t]) for r in rows[t]]
                        for t in tables})


def read_cost_model(db: Database, conn: sa.Connection, build_id: int) -> StoredCostModel:
    """A build's cost model and its digest, each of its tables read once.

    Runtime complexity: O(atoms * degree + bundle members) rows.

    Raises
    ------
    ValueError
        If the stored rows do not form a valid cost model (naming what is wrong).
    """
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, columns in DIGESTED.items():
        if (name.startswith("bundle") and db.schema_version < 2) or (
                name in STEP_TABLES and name not in db.tables):
            rows[name] = []
            continue
        table = S.metadata.tables[name]
        rows[name] = [dict(r) for r in conn.execute(
            sa.select(*(table.c[c] for c in columns)).where(table.c.build_id == build_id)
        ).mappings()]
    return StoredCostModel(_model(rows, build_id), cost_model_digest(rows, db.schema_version))


def _model(rows: Mapping[str, list[dict[str, Any]]], build_id: int) -> CostModel:
    """The cost model the rows of :func:`read_cost_model` hold."""
    atoms = sorted(rows["features"], key=lambda r: r["feature_id"])
    coefs: dict[int, dict[int, float]] = {}
    for r in rows["feature_costs"]:
        coefs.setdefault(r["feature_id"], {})[r["degree"]] = r["coefficient"]
    missing = [r["name"] for r in atoms if r["feature_id"] not in coefs]
    if missing:
        raise InvalidArgumentError(
            f"build {build_id}: atoms {missing} have no stored cost coefficients")
    name_of = {r["feature_id"]: r["name"] for r in atoms}
    bundles: dict[str, list[str]] = {
        r["name"]: [] for r in sorted(rows["bundles"], key=lambda r: r["bundle_id"])}
    bundle_name = {r["bundle_id"]: r["name"] for r in rows["bundles"]}
    for r in sorted(rows["bundle_atoms"], key=lambda r: (r["bundle_id"], r["feature_id"])):
        if r["bundle_id"] in bundle_name and r["feature_id"] in name_of:
            bundles[bundle_name[r["bundle_id"]]].append(name_of[r["feature_id"]])
    steps, uses, start = _stored_steps(rows, name_of, build_id)
    return CostModel(
        {r["name"]: stored_curve(coefs[r["feature_id"]],
                                 f"feature {r['feature_id']} of build {build_id}")
         for r in atoms},
        bundles or None,
        {r["name"]: json.loads(r["columns"]) for r in atoms},
        steps=steps or None, uses=uses or None, start=start,
    )


def _stored_steps(rows: Mapping[str, list[dict[str, Any]]], name_of: Mapping[int, str],
                  build_id: int) -> tuple[dict[str, CostCurve], dict[str, list[str]],
                                          CostCurve | None]:
    """The shared steps, their users and the start the step rows hold."""
    steps: dict[str, CostCurve] = {}
    start = None
    step_name: dict[int, str] = {}
    for r in sorted(rows.get("cost_steps", []), key=lambda r: r["step_id"]):
        what = f"step {r['name']!r} of build {build_id}"
        try:
            coefficients = json.loads(r["coefficients"])
            curve = CostCurve(coefficients)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"{what}: stored curve is not valid ({exc})") from None
        if r["name"] == START:
            start = curve
        else:
            steps[r["name"]] = curve
            step_name[r["step_id"]] = r["name"]
    uses: dict[str, list[str]] = {}
    for r in sorted(rows.get("cost_step_users", []),
                    key=lambda r: (r["step_id"], r["feature_id"])):
        if r["step_id"] not in step_name or r["feature_id"] not in name_of:
            raise InvalidArgumentError(
                f"build {build_id}: a step user row names step {r['step_id']} and atom "
                f"{r['feature_id']}, which the build does not have")
        uses.setdefault(name_of[r["feature_id"]], []).append(step_name[r["step_id"]])
    return steps, uses, start


def atom_order(conn: sa.Connection, build_id: int) -> list[str]:
    """Atomic feature names of a build in their stored order.

    Runtime complexity: one query, O(atoms) rows.
    """
    f = S.features
    rows = conn.execute(
        sa.select(f.c.name).where(f.c.build_id == build_id).order_by(f.c.feature_id)
    )
    return [r.name for r in rows]


def feature_order(db: Database, conn: sa.Connection, build_id: int) -> list[str]:
    """The lattice's feature names of a build, in order (bit ``i`` of an expansion's mask
    is name ``i``): its bundles when it has any, else its atoms.

    Runtime complexity: one or two queries, O(bundles + atoms) rows.
    """
    if db.schema_version >= 2:
        u = S.bundles
        bundles = [r.name for r in conn.execute(
            sa.select(u.c.name).where(u.c.build_id == build_id).order_by(u.c.bundle_id))]
        if bundles:
            return bundles
    return atom_order(conn, build_id)


def lattice_order(model: CostModel) -> list[str]:
    """:func:`feature_order` of a build whose cost model is ``model``, without reading it.

    >>> lattice_order(CostModel({"a": "1", "b": "2"}, {"ab": ["a", "b"]}))
    ['ab']
    """
    return list(model.bundles) or list(model.atoms)
