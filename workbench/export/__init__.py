"""Template export: install a tuned variant as Goose's compaction prompt overrides.

`export_template` validates a variant's two templates in the sandbox, backs up the files it
replaces and writes them to ``<goose config dir>/prompts/``; `restore_backup` undoes it.
"""

from workbench.export._export import BACKUP_MARK, ExportResult, export_template, restore_backup

__all__ = ["BACKUP_MARK", "ExportResult", "export_template", "restore_backup"]
