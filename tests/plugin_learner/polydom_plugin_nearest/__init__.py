"""A nearest-centroid classifier that polydom can store without pickle (a plugin)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class NearestCentroid(ClassifierMixin, BaseEstimator):
    """Each class's mean row; a row gets the class of the nearest mean."""

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        self.centroids_ = np.vstack([X[y == c].mean(axis=0) for c in self.classes_])
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        distances = ((X[:, None, :] - self.centroids_[None, :, :]) ** 2).sum(axis=2)
        return self.classes_[np.argmin(distances, axis=1)]

    def to_arrays(self):
        return {"classes": self.classes_, "centroids": self.centroids_}, {}

    @classmethod
    def from_arrays(cls, arrays, meta):
        model = cls()
        model.classes_ = np.asarray(arrays["classes"])
        model.centroids_ = np.asarray(arrays["centroids"], dtype=float)
        return model
