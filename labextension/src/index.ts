import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { JSONObject } from '@lumino/coreutils';

import { Widget } from '@lumino/widgets';

import { renderBatch } from '../../jupyter_agent/ui/static/batch.js';

import { renderRunInto } from '../../jupyter_agent/ui/static/render.js';

/**
 * The MIME type of a jupyter-agent run (its events and view state).
 */
export const MIME_TYPE = 'application/vnd.jupyter-agent.run+json';

/**
 * The class name added to the renderer's node.
 */
const CLASS_NAME = 'jp-RenderedJupyterAgentRun';

/**
 * A widget that draws a saved jupyter-agent run from its MIME payload.
 */
export class RenderedRun extends Widget implements IRenderMime.IRenderer {
  /**
   * Construct a renderer for one output.
   */
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass(CLASS_NAME);
  }

  /**
   * Draw the payload's `view` (the same view state the live widget draws), statically.
   */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = (model.data[this._mimeType] || {}) as JSONObject;
    const view = data.view as JSONObject | undefined;
    if (!view || typeof view !== 'object') {
      this.node.textContent =
        'This jupyter-agent output has no view state to draw (unknown format version ' +
        `${String(data.version ?? '?')}).`;
      return Promise.resolve();
    }
    // A saved notebook has no kernel to answer to: no onAction, so asks show as static.
    // renderRunInto keeps open sections when a display update re-renders this output.
    renderRunInto(this.node, view);
    return Promise.resolve();
  }

  /**
   * The MIME type this renderer reads from the bundle.
   */
  private _mimeType: string;
}

/**
 * The factory that makes run renderers; `safe` because it draws data, never script.
 */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new RenderedRun(options)
};

/**
 * The MIME type of a jupyter-agent batch card (its progress view: counts, results, board).
 */
export const BATCH_MIME_TYPE = 'application/vnd.jupyter-agent.batch+json';

/**
 * A widget that draws a finished (or saved) batch card from its MIME payload.
 */
export class RenderedBatch extends Widget implements IRenderMime.IRenderer {
  /**
   * Construct a renderer for one output.
   */
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass('jp-RenderedJupyterAgentBatch');
  }

  /**
   * Draw the payload (the batch's view) statically: no stop buttons, nothing to send. A
   * payload that cannot be drawn (damaged, another version) shows the bundle's plain text.
   */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const view = model.data[this._mimeType];
    try {
      if (!view || typeof view !== 'object' || Array.isArray(view)) {
        throw new Error('not a batch view');
      }
      renderBatch(this.node, view);
    } catch {
      const text = model.data['text/plain'];
      this.node.textContent = '';
      const pre = document.createElement('pre');
      pre.textContent =
        typeof text === 'string' && text
          ? text
          : 'This jupyter-agent batch output could not be drawn.';
      this.node.appendChild(pre);
    }
    return Promise.resolve();
  }

  /**
   * The MIME type this renderer reads from the bundle.
   */
  private _mimeType: string;
}

/**
 * The factory that makes batch renderers; `safe`: it draws text nodes only, never markup.
 */
export const batchRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [BATCH_MIME_TYPE],
  createRenderer: options => new RenderedBatch(options)
};

/**
 * The MIME renderer extensions: runs and batch cards saved in notebook outputs.
 */
const extensions: IRenderMime.IExtension[] = [
  {
    id: 'jupyter-agent:run-renderer',
    description: 'Renders jupyter-agent runs saved in notebook outputs.',
    rendererFactory,
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'jupyter-agent:batch-renderer',
    description: 'Renders jupyter-agent batch cards saved in notebook outputs.',
    rendererFactory: batchRendererFactory,
    rank: 0,
    dataType: 'json'
  }
];

export default extensions;
