import { ICellModel } from '@jupyterlab/cells';

import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';

/**
 * A code cell whose first line is one of these cell magics holds a prompt, not Python.
 */
export const AGENT_CELL_RE = /^\s*%%(chat|toolloop|plan)\b/;

/**
 * The editor MIME type of markdown cells; agent cells borrow it for their highlighting.
 */
export const MARKDOWN_MIME = 'text/x-ipythongfm';

/**
 * Highlight the body of agent cells in `panel` as markdown, and keep doing so as cells are
 * added, edited or re-typed by the notebook.
 *
 * The editor's language follows the cell model's `mimeType`, which the notebook sets for
 * every code cell (when it is created and when the kernel's language arrives). So a cell
 * whose source starts with `%%chat`, `%%toolloop` or `%%plan` gets the markdown MIME type,
 * and gets it back whenever the notebook resets it; a cell that stops being an agent cell
 * returns to the notebook's code MIME type. The MIME type of a code cell is editor state
 * only: it is not saved and does not affect execution.
 */
export function highlightAgentCells(panel: NotebookPanel): void {
  const attached = new WeakSet<ICellModel>();

  const apply = (cell: ICellModel): void => {
    if (cell.type !== 'code') {
      return;
    }
    const isAgent = AGENT_CELL_RE.test(cell.sharedModel.getSource().slice(0, 64));
    if (isAgent && cell.mimeType !== MARKDOWN_MIME) {
      cell.mimeType = MARKDOWN_MIME;
    } else if (!isAgent && cell.mimeType === MARKDOWN_MIME) {
      cell.mimeType = panel.content.codeMimetype;
    }
  };

  const attach = (cell: ICellModel): void => {
    if (attached.has(cell)) {
      return;
    }
    attached.add(cell);
    cell.contentChanged.connect(() => apply(cell));
    // The notebook resets code cells' MIME type when the kernel language is known.
    cell.mimeTypeChanged.connect(() => apply(cell));
    apply(cell);
  };

  const watch = (model: INotebookModel | null): void => {
    if (!model) {
      return;
    }
    const scan = (): void => {
      for (const cell of model.cells) {
        attach(cell);
      }
    };
    model.cells.changed.connect(scan);
    scan();
  };

  watch(panel.content.model);
  panel.content.modelChanged.connect(() => watch(panel.content.model));
}
