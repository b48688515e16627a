"""Template export: install a tuned variant as Goose's compaction prompt overrides.

`export_template` validates a variant's two templates in the sandbox, backs up the files it
replaces and writes them to ``<goose config dir>/prompts/``; `restore_backup` puts one backup
back. `export_from_run` recomputes a run's winner by the winner rule and exports it with its
evidence as a Jinja comment (`pick_from_run`, `evidence_comment`, `stage_winner`), or
`write_variant` copies it into ``prompts/<name>/``. Every export is kept in the destination's
history (`export_history`): `restore_last_export` steps back one, `restore_all_exports` returns
the folder to its state before the first.
"""

from workbench.export._evidence import (
    Evidence,
    evidence_comment,
    export_from_run,
    pick_from_run,
    stage_winner,
    template_hash,
    write_variant,
)
from workbench.export._export import BACKUP_MARK, ExportResult, export_template, restore_backup
from workbench.export._restore import (
    EXPORT_HISTORY,
    LAST_EXPORT,
    export_history,
    history_lines,
    record_export,
    restore_all_exports,
    restore_last_export,
)

__all__ = ["BACKUP_MARK", "EXPORT_HISTORY", "LAST_EXPORT", "Evidence", "ExportResult",
           "evidence_comment", "export_from_run", "export_history", "export_template",
           "history_lines", "pick_from_run", "record_export", "restore_all_exports",
           "restore_backup", "restore_last_export", "stage_winner", "template_hash",
           "write_variant"]
