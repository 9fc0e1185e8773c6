"""The plugin's learner spec: its factory and its model class, as paths."""

from polydom.blobs.learner_specs import LearnerSpec


def nearest(seed: int = 0):
    from polydom_plugin_nearest import NearestCentroid

    return NearestCentroid()


SPEC = LearnerSpec("nearest", "polydom_plugin_nearest.spec:nearest",
                   model_classes=("polydom_plugin_nearest:NearestCentroid",))
