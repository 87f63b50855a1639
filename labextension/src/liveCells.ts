import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';

import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import type { Kernel, KernelMessage } from '@jupyterlab/services';

/**
 * The comm target of the live notebook, the same name on both sides
 * (jupyter_agent/tools/notebook/live_cells.py). The kernel registers it and opens a comm to it at
 * `%load_ext jupyter_agent`; this extension registers it on every kernel connection.
 */
export const LIVE_TARGET = 'jupyter_agent.live_cells';

/** A longer source is cut before sending (the kernel cuts at the same length). */
const MAX_SOURCE_CHARS = 20000;

/** Characters sent of an output's text head or error value (the kernel keeps 300). */
const MAX_TEXT_CHARS = 300;

/** Output summaries sent per cell. */
const MAX_OUTPUTS = 20;

/** A notebook with more cells is not sent (the kernel reads the saved file instead). */
const MAX_CELLS = 2000;

interface IOutputSummary {
  output_type: string;
  name?: string;
  text?: string;
  mimes?: string[];
  ename?: string;
  evalue?: string;
}

interface ICellSnapshot {
  kind: string;
  source: string;
  execution_count: number | null;
  outputs: IOutputSummary[];
}

function head(value: unknown, n: number): string {
  const text = Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
  return text.length > n ? text.slice(0, n) : text;
}

/**
 * One output in a few fields: its type, the head of its text, its MIME types, an error's
 * name and value. Never the full data: no HTML, no image bytes.
 */
function summarise(out: Record<string, unknown>): IOutputSummary | null {
  const type = out.output_type;
  if (type === 'stream') {
    return { output_type: type, name: head(out.name, 40), text: head(out.text, MAX_TEXT_CHARS) };
  }
  if (type === 'error') {
    return {
      output_type: type,
      ename: head(out.ename, 200),
      evalue: head(out.evalue, MAX_TEXT_CHARS)
    };
  }
  if (type === 'execute_result' || type === 'display_data') {
    const data = (out.data ?? {}) as Record<string, unknown>;
    return {
      output_type: type,
      text: head(data['text/plain'], MAX_TEXT_CHARS),
      mimes: Object.keys(data).slice(0, 20)
    };
  }
  return null;
}

function cellSnapshot(model: ICellModel): ICellSnapshot {
  const source = model.sharedModel.getSource();
  const cell: ICellSnapshot = {
    kind: model.type,
    source: source.length > MAX_SOURCE_CHARS ? source.slice(0, MAX_SOURCE_CHARS) : source,
    execution_count: null,
    outputs: []
  };
  if (model.type === 'code') {
    const code = model as ICodeCellModel;
    cell.execution_count = code.executionCount ?? null;
    for (let i = 0; i < code.outputs.length && cell.outputs.length < MAX_OUTPUTS; i++) {
      const summary = summarise(code.outputs.get(i).toJSON() as Record<string, unknown>);
      if (summary) {
        cell.outputs.push(summary);
      }
    }
  }
  return cell;
}

/**
 * The notebook of `panel` as the kernel's tools read it, as JSON; null when too large to send.
 */
export function notebookSnapshot(panel: NotebookPanel): string | null {
  const cells = panel.content.model?.cells;
  if (!cells || cells.length > MAX_CELLS) {
    return null;
  }
  const out: ICellSnapshot[] = [];
  for (let i = 0; i < cells.length; i++) {
    out.push(cellSnapshot(cells.get(i)));
  }
  return JSON.stringify({ version: 1, path: panel.context.path, cells: out });
}

/**
 * Push `panel`'s cells to its kernel before each execution, so `read_notebook` and
 * `read_cells` see the notebook as the user does, unsaved edits included.
 *
 * A running cell keeps the kernel busy, so it cannot ask for the notebook; but it handles
 * shell messages in order, and `executionScheduled` is emitted synchronously just before the
 * cell's execute request is sent. The cells go only when they changed since the last send.
 * The comm comes from the kernel (`%load_ext jupyter_agent` opens it) or, for a kernel set up
 * before this page connected (a reload, a second notebook on the kernel), is opened from here
 * when the kernel reports one open. A restart or a new kernel drops the comm; the new
 * kernel's `%load_ext` opens a fresh one. Without the kernel side nothing is sent.
 */
export function liveCells(panel: NotebookPanel): void {
  let comm: Kernel.IComm | null = null;
  let lastSent = '';
  const registered = new WeakSet<Kernel.IKernelConnection>();

  const push = (): void => {
    if (!comm || comm.isDisposed) {
      comm = null;
      return;
    }
    const snapshot = notebookSnapshot(panel);
    if (snapshot === null || snapshot === lastSent) {
      return;
    }
    try {
      comm.send(JSON.parse(snapshot));
      lastSent = snapshot;
    } catch (reason) {
      console.warn('jupyter-agent: could not send the notebook to the kernel', reason);
      comm = null;
    }
  };

  const adopt = (next: Kernel.IComm): void => {
    comm = next;
    lastSent = '';
    next.onMsg = (msg: KernelMessage.ICommMsgMsg): void => {
      const error = (msg.content.data as { error?: unknown }).error;
      if (typeof error === 'string') {
        console.warn(`jupyter-agent: ${error}`);
      }
    };
    next.onClose = (): void => {
      if (comm === next) {
        comm = null;
      }
    };
    push();
  };

  const connect = (kernel: Kernel.IKernelConnection | null | undefined): void => {
    if (!kernel || registered.has(kernel)) {
      return;
    }
    comm = null;
    lastSent = '';
    registered.add(kernel);
    kernel.registerCommTarget(LIVE_TARGET, next => adopt(next));
    kernel.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
        comm = null; // the new kernel process opens a new comm at its %load_ext
      }
    });
    // A kernel that loaded jupyter_agent before this page connected: open our own comm.
    kernel
      .requestCommInfo({ target_name: LIVE_TARGET })
      .then(reply => {
        const content = reply.content;
        if (
          content.status === 'ok' &&
          Object.keys(content.comms).length > 0 &&
          comm === null &&
          !kernel.isDisposed &&
          panel.sessionContext.session?.kernel === kernel
        ) {
          const next = kernel.createComm(LIVE_TARGET);
          next.open({ version: 1 });
          adopt(next);
        }
      })
      .catch(() => undefined); // no kernel side: nothing is sent
  };

  const onScheduled = (
    _: unknown,
    args: { notebook: { node: HTMLElement } }
  ): void => {
    if (args.notebook === panel.content) {
      push();
    }
  };
  NotebookActions.executionScheduled.connect(onScheduled);
  panel.sessionContext.kernelChanged.connect((_, change) => connect(change.newValue));
  void panel.sessionContext.ready.then(() => connect(panel.sessionContext.session?.kernel));
  panel.disposed.connect(() => {
    NotebookActions.executionScheduled.disconnect(onScheduled);
    comm = null;
  });
}
