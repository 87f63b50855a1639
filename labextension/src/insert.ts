import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/**
 * The DOM event a proposed cell's "Insert below" button dispatches
 * (jupyter_agent/ui/static/proposal.js), detail `{id, source, kind}`.
 */
export const INSERT_EVENT = 'jupyter-agent-insert-cell';

interface IInsertDetail {
  id?: string;
  source?: string;
  kind?: string;
}

/**
 * Insert the proposed cell below the cell whose output holds the card, in `panel`.
 *
 * The event is cancelled once handled, so the card knows the cell went in (without the
 * extension it copies the code to the clipboard instead). A proposal is inserted at most once
 * per page: a second event for the same id (a re-rendered card, a double click) is ignored.
 * Nothing runs: the new cell is only added and selected.
 */
export function insertOnProposal(panel: NotebookPanel): void {
  const done = new Set<string>();
  const onInsert = (event: Event): void => {
    const detail = (event as CustomEvent<IInsertDetail>).detail || {};
    const target = event.target instanceof Node ? event.target : null;
    const cells = panel.content.widgets;
    const index = target ? cells.findIndex(cell => cell.node.contains(target)) : -1;
    if (index < 0 || typeof detail.source !== 'string') {
      return;
    }
    event.preventDefault();
    const id = detail.id || '';
    if (id && done.has(id)) {
      return;
    }
    done.add(id);
    const notebook = panel.content;
    notebook.activeCellIndex = index;
    NotebookActions.insertBelow(notebook);
    const kind = detail.kind === 'markdown' ? 'markdown' : 'code';
    if (notebook.activeCell?.model.type !== kind) {
      NotebookActions.changeCellType(notebook, kind);
    }
    notebook.activeCell?.model.sharedModel.setSource(detail.source);
  };
  panel.node.addEventListener(INSERT_EVENT, onInsert);
  panel.disposed.connect(() => panel.node.removeEventListener(INSERT_EVENT, onInsert));
}
