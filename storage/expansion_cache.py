"""A build's stored expansions as a mapping ``frozenset(feature names) -> Expansion``."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import sqlalchemy as sa

from lattice.expansion import Expansion
from polydom.curves.names import feature_set_text
from polydom.errors import InvalidArgumentError
from storage import schema as S
from storage.blobs import dump_model, dump_predictions, load_model, load_predictions
from storage.build_records import build_row
from storage.builds import KnownModels
from storage.candidate_fields import fold_scores_from_text, fold_scores_text
from storage.codec import feature_mask, mask_features
from storage.cost_model_rows import feature_order
from storage.database import Database, now
from storage.expansion_seals import check_expansion, expansion_digest, expansion_select

__all__ = ["ExpansionCache"]


class ExpansionCache(MutableMapping):
    """A build's stored expansions: ``frozenset(feature names) -> lattice.Expansion``.

    ``cache[fs] = expansion`` serialises the model (and the out-of-fold ``predictions``,
    when the learner recorded them), keeps the accuracy's standard error and fold scores
    (sealed with it) and commits the rows in one transaction of their own,
    so an expansion survives any later crash.  ``fs in cache`` and ``cache[fs]`` read
    stored rows (also those of earlier builds with the same training parameters),
    predictions included: a DAG's classifier bank given the cache
    (``DAGClassifier(bank=cache)``) trains nothing for a stored feature set.  Made by
    :meth:`storage.IndexStore.expansion_cache`; ``known_models`` is the store's record of
    the models handed out, so that publishing links candidates to their expansions.
    """

    def __init__(
        self, db: Database, known_models: KnownModels, build_id: int, trusted: bool = False
    ) -> None:
        self._db = db
        self._known_models = known_models
        self.trusted = trusted
        with db.read() as conn:
            row = build_row(db, conn, build_id)
            self.build_id = int(row.id)
            self._key = row.expansion_key
            self.features = feature_order(db, conn, self.build_id)

    def __repr__(self) -> str:
        return f"ExpansionCache(build={self.build_id}, store={self._db.display_url!r})"

    def _mask(self, features: Any) -> str | None:
        if isinstance(features, str) or not isinstance(features, (set, frozenset)):
            return None
        return feature_mask(features, self.features)

    def _select(self, *cols: Any) -> sa.Select:
        return sa.select(*cols).where(S.expansions.c.expansion_key == self._key)

    def __contains__(self, features: object) -> bool:
        mask = self._mask(features)
        if mask is None:
            return False
        x = S.expansions
        with self._db.read() as conn:
            found = conn.execute(self._select(x.c.id).where(x.c.feature_mask == mask)).first()
        return found is not None

    def __getitem__(self, features: frozenset) -> Expansion:
        mask = self._mask(features)
        if mask is None:
            raise KeyError(features)
        x = S.expansions
        stored = None
        with self._db.read() as conn:
            row = conn.execute(
                expansion_select(self._db, x.c.model_blob).where(
                    x.c.expansion_key == self._key, x.c.feature_mask == mask)
            ).first()
            if row is not None and "expansion_predictions" in self._db.tables:
                xp = S.expansion_predictions
                stored = conn.execute(
                    sa.select(xp.c.format, xp.c.digest, xp.c.blob).where(
                        xp.c.expansion_id == row.id)
                ).first()
        if row is None:
            raise KeyError(features)
        if row.model_format is not None or stored is not None:
            self._db.check_key()
        check_expansion(self._db, row)  # re-verified, never trusted, before it is reused
        predictions = None
        if stored is not None:
            predictions = load_predictions(
                stored.blob, stored.format, stored.digest, self._db.digest,
                f"predictions of expansion {row.id} ({row.features})",
            )
        model = load_model(
            row.model_blob,
            row.model_format,
            row.model_sha256,
            trusted=self.trusted,
            what=f"model of expansion {row.id} ({row.features})",
            digest=self._db.digest,
        )
        if model is not None:
            self._known_models[id(model)] = (model, self._key, int(row.id))
        what = f"expansion {row.id} ({row.features}) of {self._db.display_url!r}"
        return Expansion(
            frozenset(features), row.accuracy, model, row.fit_seconds, predictions,
            0.0 if row.accuracy_se is None else row.accuracy_se,
            () if row.fold_scores is None else fold_scores_from_text(row.fold_scores, what))

    def __setitem__(self, features: frozenset, expansion: Expansion) -> None:
        if not isinstance(expansion, Expansion):
            raise InvalidArgumentError(f"expansion must be a lattice.Expansion, got {expansion!r}")
        mask = self._mask(features)
        if mask is None:
            raise InvalidArgumentError(
                f"features must be a set of names among {self.features}, got {features!r}"
            )
        if frozenset(expansion.features) != frozenset(features):
            raise InvalidArgumentError(
                f"expansion.features {sorted(expansion.features)} differ from the key "
                f"{sorted(features)}"
            )
        self._db.check_writable()
        dumped = dump_model(expansion.model)
        blob, fmt = dumped if dumped is not None else (None, None)
        predicted = dump_predictions(expansion.predictions)
        self._db.add_tables(("expansion_seals",) if predicted is None
                            else ("expansion_seals", "expansion_predictions"))
        values = {
            "accuracy": float(expansion.accuracy),
            "accuracy_se": float(expansion.accuracy_se),
            "fold_scores": fold_scores_text(expansion.fold_scores),
            "fit_seconds": float(expansion.fit_seconds),
            "model_format": fmt,
            "model_sha256": None if blob is None else self._db.digest.of(blob),
            "model_blob": blob,
        }
        x = S.expansions
        with self._db.write() as conn:
            found = conn.execute(self._select(x.c.id).where(x.c.feature_mask == mask)).scalar()
            if found is None:
                found = conn.execute(
                    x.insert().values(
                        expansion_key=self._key,
                        build_id=self.build_id,
                        feature_mask=mask,
                        features=feature_set_text(features),
                        n_features=len(features),
                        created_at=now(),
                        **values,
                    )
                ).inserted_primary_key[0]
            else:
                conn.execute(x.update().where(x.c.id == found).values(**values))
            if "expansion_predictions" in self._db.tables:
                xp = S.expansion_predictions
                conn.execute(xp.delete().where(xp.c.expansion_id == found))
            if predicted is not None:
                conn.execute(S.expansion_predictions.insert().values(
                    expansion_id=found, format=predicted[1],
                    digest=self._db.digest.of(predicted[0]), blob=predicted[0]))
            xs = S.expansion_seals
            conn.execute(xs.delete().where(xs.c.expansion_id == found))
            sealed = conn.execute(expansion_select(self._db).where(x.c.id == found)).one()
            conn.execute(xs.insert().values(expansion_id=found,
                                            digest=expansion_digest(self._db, sealed)))
        if expansion.model is not None:
            self._known_models[id(expansion.model)] = (
                expansion.model,
                self._key,
                int(found),
            )

    def __delitem__(self, features: frozenset) -> None:
        mask = self._mask(features)
        if mask is None:
            raise KeyError(features)
        self._db.check_writable()
        x = S.expansions
        try:
            with self._db.write() as conn:
                for name in ("expansion_predictions", "expansion_seals"):
                    if name in self._db.tables:
                        side = S.metadata.tables[name]
                        conn.execute(side.delete().where(side.c.expansion_id.in_(
                            self._select(x.c.id).where(x.c.feature_mask == mask)
                            .scalar_subquery())))
                gone = conn.execute(
                    x.delete().where(x.c.expansion_key == self._key, x.c.feature_mask == mask)
                ).rowcount
        except sa.exc.IntegrityError:
            raise InvalidArgumentError(
                f"expansion {sorted(features)} is used by a published build; cannot delete it"
            ) from None
        if not gone:
            raise KeyError(features)

    def __iter__(self) -> Iterator[frozenset]:
        x = S.expansions
        with self._db.read() as conn:
            masks = conn.execute(self._select(x.c.feature_mask).order_by(x.c.id)).scalars().all()
        return iter([mask_features(m, self.features) for m in masks])

    def __len__(self) -> int:
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(S.expansions).where(
                        S.expansions.c.expansion_key == self._key
                    )
                ).scalar()
            )
