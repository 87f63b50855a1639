// Types of batch.js, for TypeScript users (the JupyterLab extension imports batch.js).

/** A batch's view as built by jupyter_agent/batch/progress.py (plain JSON). */
export type BatchView = { [key: string]: any };

/** A message the card sends when a stop button is clicked (live cards only). */
export interface BatchStopMessage {
  type: 'stop';
  mode: 'finish' | 'abort';
}

/** Options of a render: stop buttons when `onAction` is given, static otherwise. */
export interface BatchRenderOptions {
  onAction?: (msg: BatchStopMessage) => void;
}

/** Rows drawn in a results table at most. */
export const MAX_ROWS: number;

/**
 * Draw `view` into `el`, replacing what `el` held. A payload that cannot be drawn throws
 * before `el` is touched.
 */
export function renderBatch(
  el: HTMLElement,
  view: unknown,
  opts?: BatchRenderOptions,
  sent?: { mode?: string }
): void;

/** The anywidget view of the live card. */
declare const widget: {
  render(props: { model: any; el: HTMLElement }): () => void;
};
export default widget;
