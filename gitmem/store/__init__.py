"""The git store: every contact with dulwich, behind ``Storage``, ``Snapshot`` (a
memory store) and ``FileSnapshot`` (a file store).

Names are imported when first used (module ``__getattr__``): a submodule such as the
push hook's readers loads without the whole store and dulwich's repository layers."""

from __future__ import annotations

from gitmem.lazy import on_first_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.store.commit import Built
    from gitmem.store.filestore import FileSnapshot
    from gitmem.store.layout import PROJECT_PREFIX, check_store, in_use, project_dir
    from gitmem.store.moments import past_write
    from gitmem.store.proposals import APPROVED, PROPOSAL, Pending, proposal_name, split_name
    from gitmem.store.remote import Remote
    from gitmem.store.settings import tracks
    from gitmem.store.snapshot import Snapshot
    from gitmem.store.storage import Storage, git_identity

# name → the module that defines it, imported on first use (``Remote`` brings
# dulwich's network client: loaded by sync, not by every read)
_LAZY = {
    "APPROVED": "gitmem.store.proposals",
    "Built": "gitmem.store.commit",
    "FileSnapshot": "gitmem.store.filestore",
    "PROJECT_PREFIX": "gitmem.store.layout",
    "PROPOSAL": "gitmem.store.proposals",
    "Pending": "gitmem.store.proposals",
    "Remote": "gitmem.store.remote",
    "Snapshot": "gitmem.store.snapshot",
    "Storage": "gitmem.store.storage",
    "check_store": "gitmem.store.layout",
    "git_identity": "gitmem.store.storage",
    "in_use": "gitmem.store.layout",
    "past_write": "gitmem.store.moments",
    "project_dir": "gitmem.store.layout",
    "proposal_name": "gitmem.store.proposals",
    "split_name": "gitmem.store.proposals",
    "tracks": "gitmem.store.settings",
}


__getattr__, __dir__ = on_first_use(globals(), _LAZY, fresh=("Remote",))


__all__ = [
    "APPROVED",
    "PROJECT_PREFIX",
    "PROPOSAL",
    "Built",
    "FileSnapshot",
    "Pending",
    "Remote",
    "Snapshot",
    "Storage",
    "check_store",
    "git_identity",
    "in_use",
    "past_write",
    "project_dir",
    "proposal_name",
    "split_name",
    "tracks",
]
