"""What every decoder of a stored blob needs, on floor 1 (below storage and learners).

- :mod:`polydom.blobs.bounds`: size and dtype bounds of ``.npy``/``.npz``/zip archives,
  checked before anything is inflated or allocated;
- :mod:`polydom.blobs.allowlist`: the model allow-list, a grammar over skops archives;
- :mod:`polydom.blobs.tree_check`, :mod:`polydom.blobs.svm_check`: the structure checks of
  stored decision trees and libsvm models.

The package imports nothing itself: a decoder imports the module it needs.
"""
