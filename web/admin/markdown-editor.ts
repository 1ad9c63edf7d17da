import { defaultKeymap, history, historyKeymap } from '@codemirror/commands'
import { markdown } from '@codemirror/lang-markdown'
import { defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language'
import { Compartment, EditorState } from '@codemirror/state'
import { drawSelection, EditorView, keymap, placeholder } from '@codemirror/view'
import { h } from './dom.ts'

export interface MarkdownEditor {
  readonly view: EditorView
  readonly host: HTMLElement
  text (): string
  setText (text: string): void
  /** Read-only: shown and selectable, not changed (a published post a contributor may not edit). */
  setReadOnly (readOnly: boolean): void
}

export interface MarkdownEditorOptions {
  readonly label: string
  readonly onChange: (text: string) => void
  /** Uploads image files dropped or pasted into the text; answers the Markdown to insert for each. */
  readonly onImages: (files: readonly File[]) => Promise<string[]>
  readonly onError: (message: string) => void
}

function imagesOf (list: DataTransfer | null): File[] {
  return Array.from(list?.files ?? []).filter(f => f.type.startsWith('image/'))
}

/**
 * The Markdown editor (CodeMirror 6). It lives in a shadow root: CodeMirror adds its style rules
 * to the root it is mounted in, and only a shadow root takes them as a constructed style sheet; in
 * the document itself they would be an inline `<style>`, which the page's Content-Security-Policy
 * refuses. The page's own style sheet is linked inside the shadow root too.
 */
export function markdownEditor (opts: MarkdownEditorOptions): MarkdownEditor {
  const host = h('div', { class: 'markdown-host' })
  const shadow = host.attachShadow({ mode: 'open' })
  const sheet = document.querySelector<HTMLLinkElement>('link[rel="stylesheet"]')
  if (sheet !== null) shadow.append(h('link', { rel: 'stylesheet', href: sheet.href }))
  const mount = h('div', { class: 'markdown-mount' })
  shadow.append(mount)

  const insertImages = (view: EditorView, files: File[], at: number) => {
    const note = `![Uploading ${files.length === 1 ? files[0]!.name : `${files.length} images`}…]()`
    view.dispatch({ changes: { from: at, insert: note } })
    opts.onImages(files).then(lines => {
      const start = view.state.doc.toString().indexOf(note)
      const text = lines.map(l => `${l}\n`).join('')
      if (start >= 0) view.dispatch({ changes: { from: start, to: start + note.length, insert: text }, selection: { anchor: start + text.length } })
      else view.dispatch({ changes: { from: view.state.doc.length, insert: `\n${text}` } })
    }, (err: unknown) => {
      const start = view.state.doc.toString().indexOf(note)
      if (start >= 0) view.dispatch({ changes: { from: start, to: start + note.length, insert: '' } })
      opts.onError(err instanceof Error ? err.message : String(err))
    })
  }

  // Text put in by the page (a post loaded), not typed: no change to report.
  let silent = false
  const editable = new Compartment()
  const view = new EditorView({
    root: shadow,
    parent: mount,
    state: EditorState.create({
      doc: '',
      extensions: [
        history(),
        editable.of([]),
        drawSelection(),
        markdown(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        EditorView.lineWrapping,
        placeholder('Write in Markdown. Drop or paste images here.'),
        // Tab is left to the browser: it moves focus on, as everywhere else in the page.
        keymap.of([...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ 'aria-label': opts.label, 'aria-multiline': 'true', spellcheck: 'true' }),
        EditorView.updateListener.of(update => { if (update.docChanged && !silent) opts.onChange(update.state.doc.toString()) }),
        EditorView.domEventHandlers({
          paste (event, v) {
            const files = imagesOf(event.clipboardData)
            if (files.length === 0) return false
            event.preventDefault()
            insertImages(v, files, v.state.selection.main.head)
            return true
          },
          drop (event, v) {
            const files = imagesOf(event.dataTransfer)
            if (files.length === 0) return false
            event.preventDefault()
            insertImages(v, files, v.posAtCoords({ x: event.clientX, y: event.clientY }) ?? v.state.selection.main.head)
            return true
          },
        }),
        EditorView.theme({
          '&': { minHeight: '16rem', border: '1px solid var(--line)', borderRadius: '6px', background: 'var(--field)' },
          '&.cm-focused': { outline: '3px solid var(--focus)', outlineOffset: '2px' },
          '.cm-content': { fontFamily: 'var(--mono)', fontSize: '0.95rem', padding: '0.75rem 0' },
          '.cm-scroller': { minHeight: '16rem' },
        }),
      ],
    }),
  })
  return {
    view,
    host,
    text: () => view.state.doc.toString(),
    setReadOnly: (readOnly: boolean) => {
      view.dispatch({ effects: editable.reconfigure(readOnly ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : []) })
    },
    setText: (text: string) => {
      if (text === view.state.doc.toString()) return
      silent = true
      try {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } })
      } finally {
        silent = false
      }
    },
  }
}
