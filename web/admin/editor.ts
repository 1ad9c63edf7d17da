import { diffLines } from 'diff'
import { Problem } from './api.ts'
import { field, h, showHtml, start } from './dom.ts'
import { markdownEditor } from './markdown-editor.ts'
import { mediaImage, upload } from './media.ts'
import { atLeast, type User } from './people.ts'
import { derivedExcerpt, type FeatureImage, type Post, sameValues, SEO_FIELDS, TEXT_FIELDS, type TextKey, type Values, valuesOf } from './post.ts'
import { previewLinksPanel } from './preview-links.ts'
import { revisionsPanel } from './revisions.ts'
import type { Shell } from './shell.ts'
import { authorsField, tagsField } from './tags-field.ts'

interface Draft { base: string | null, values: Values }
const draftKey = (id: number | null) => `blog-editor.draft.${id ?? 'new'}`
const asideKey = (id: number | null) => `blog-editor.set-aside.${id ?? 'new'}`

function readDraft (key: string): Draft | null {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? 'null') as Draft | null
  } catch {
    return null
  }
}

export interface EditorScreen {
  readonly element: HTMLElement
  save (): void
}

/** Image alt text from a file name: `red-bike_2.jpg` → `red bike 2`. */
function altOf (name: string): string {
  return name.replace(/\.[a-z0-9]+$/i, '').replace(/[-_]+/g, ' ').replace(/[[\]]/g, '').trim()
}

/**
 * One post in the editor: every field, the Markdown with its preview from `POST /render`, images
 * into `/media`, saving with `If-Match`, the choice when someone else saved first, the unsaved
 * draft kept in the tab, revisions, preview links and delete. What `me` may do shapes it: an
 * editor and above sets the authors; a contributor writes drafts only, and reads a published post.
 */
export function editorScreen (shell: Shell, postId: number | null, me: User | null = null): EditorScreen {
  let id = postId
  let post: Post | null = null
  /** The version the writer's text is based on: the If-Match of the next save. */
  let base: string | null = null
  let saving = false
  let featureImage: FeatureImage | null = null

  const heading = h('h1', { tabindex: -1 }, id === null ? 'New post' : 'Loading…')
  const note = h('p', { class: 'note', hidden: true })
  const controls = Object.fromEntries(TEXT_FIELDS.map(f => [f.key, f.control()])) as { [K in TextKey]: ReturnType<Extract<typeof TEXT_FIELDS[number], { key: K }>['control']> }
  const { title, status, publish_at: publishAt, excerpt } = controls
  const contributor = me?.role === 'contributor'
  // A contributor writes drafts: publishing and scheduling are not theirs.
  if (contributor) {
    for (const option of Array.from(status.options)) if (option.value !== 'draft') option.remove()
    publishAt.disabled = true
  }
  const featureInput = h('input', { type: 'file', accept: 'image/jpeg,image/png,image/webp,image/avif,image/gif' })
  const featureShown = h('div', { class: 'feature-shown' })
  const preview = h('section', { class: 'preview', 'aria-label': 'Preview', role: 'region', tabindex: 0 })
  const dirty = h('span', { class: 'dirty', hidden: true }, 'Unsaved changes')
  const tags = tagsField(shell.api, () => { changed() })
  const authors = atLeast(me?.role, 'editor') ? authorsField(shell.api, () => { changed() }) : null
  const md = markdownEditor({
    label: 'Content',
    onChange: () => { changed(); renderSoon() },
    onImages: async files => await Promise.all(files.map(async f => {
      const media = await upload(shell, f)
      return `![${media.alt !== '' ? media.alt : altOf(f.name)}](/media/${encodeURIComponent(media.id)}/file)`
    })),
    onError: message => { shell.alert(`The image was not uploaded: ${message}`) },
  })

  const rows = {
    ...Object.fromEntries(TEXT_FIELDS.map(f => [f.key, field(f.label, controls[f.key], 'hint' in f ? f.hint : undefined)])) as Record<TextKey, ReturnType<typeof field>>,
    feature_image: field('Feature image', featureInput),
  }

  // In the order valuesOf makes them (values are compared as JSON).
  const values = (): Values => ({
    ...Object.fromEntries(TEXT_FIELDS.map(f => [f.key, controls[f.key].value])) as Record<TextKey, string>,
    tags: tags.value(),
    authors: authors?.value() ?? (post?.authors ?? (me === null ? [] : [me.slug])),
    content: md.text(),
    feature_image: featureImage,
  })

  const drawFeature = () => {
    featureShown.replaceChildren(...(featureImage === null
      ? []
      : [
          h('img', { src: featureImage.url ?? mediaImage(featureImage.id, 640), alt: featureImage.alt ?? '', width: 320 }),
          h('button', { type: 'button', onclick: () => { featureImage = null; drawFeature(); changed() } }, 'Remove feature image'),
        ]))
  }

  let loadedExcerpt: string | null = null
  const apply = (v: Values) => {
    for (const f of TEXT_FIELDS) controls[f.key].value = v[f.key]
    tags.set(v.tags)
    authors?.set(v.authors ?? [])
    md.setText(v.content)
    featureImage = v.feature_image
    drawFeature()
    loadedExcerpt = v.excerpt
    renderSoon(0)
  }

  const saved = (): Values | null => post === null ? null : valuesOf(post)
  const changed = () => {
    const now = values()
    const isDirty = !sameValues(now, saved() ?? blank)
    dirty.hidden = !isDirty
    if (isDirty) sessionStorage.setItem(draftKey(id), JSON.stringify({ base, values: now } satisfies Draft))
    else sessionStorage.removeItem(draftKey(id))
  }

  // The preview: the service's own renderer, so it is what a reader gets.
  let renderTimer: ReturnType<typeof setTimeout> | undefined
  let rendered = 0
  function renderSoon (delay = 200) {
    clearTimeout(renderTimer)
    renderTimer = setTimeout(() => {
      const mine = ++rendered
      const content = md.text()
      shell.api.call<{ html: string }>('POST', '/render', { json: { content } }).then(({ body }) => {
        if (mine !== rendered) return
        showHtml(preview, body.html)
        const derived = derivedExcerpt(body.html)
        // A stored excerpt equal to the one derived from the content is the derived one: left empty,
        // it goes on following the content.
        if (loadedExcerpt !== null && excerpt.value === loadedExcerpt && loadedExcerpt === derived) {
          excerpt.value = ''
          loadedExcerpt = null
          if (post !== null) post = { ...post, excerpt: '' }
        }
        excerpt.placeholder = derived
      }, () => {})
    }, delay)
  }

  const clearErrors = () => {
    const lists = authors === null ? [tags] : [tags, authors]
    for (const r of [...Object.values(rows), ...lists]) { r.error.hidden = true; r.error.textContent = '' }
    for (const input of [...Object.values(controls), featureInput, ...lists.map(l => l.input)]) input.removeAttribute('aria-invalid')
  }
  /** Each field's errors under it; those of fields without a place of their own (the content) in the alert. */
  const showErrors = (problem: Problem) => {
    clearErrors()
    let first: HTMLElement | null = null
    const elsewhere: string[] = []
    for (const e of problem.errors) {
      const name = e.field.split('/')[0] ?? ''
      const row = name in rows ? rows[name as keyof typeof rows] : null
      const list = name === 'tags' ? tags : name === 'authors' ? authors : null
      const target = list !== null
        ? { error: list.error, input: list.input as HTMLElement }
        : row === null ? null : { error: row.error, input: row.row.querySelector<HTMLElement>('input,select,textarea') }
      if (target === null) {
        elsewhere.push(`${e.field === '' ? 'The post' : e.field}: ${e.message}`)
        continue
      }
      target.error.hidden = false
      target.error.textContent = e.message
      target.input?.setAttribute('aria-invalid', 'true')
      first ??= target.input
    }
    shell.alert([`Not saved: ${problem.detail}`, ...elsewhere].join(' '))
    first?.focus()
  }

  const body = (v: Values): Record<string, unknown> => {
    const b: Record<string, unknown> = { title: v.title, content: v.content, status: v.status, tags: v.tags }
    if (v.slug.trim() !== '') b.slug = v.slug.trim()
    b.excerpt = v.excerpt === '' ? null : v.excerpt
    if (v.status === 'scheduled') b.publish_at = v.publish_at === '' ? null : new Date(v.publish_at).toISOString()
    // Fields the service may not hold are sent only when it showed them or the writer filled them.
    for (const k of SEO_FIELDS) if ((post !== null && k in post) || v[k] !== '') b[k] = v[k] === '' ? null : v[k]
    if ((post !== null && 'feature_image' in post) || v.feature_image !== null) b.feature_image = v.feature_image?.id ?? null
    // Authors are sent only when the writer changed them: the service keeps them otherwise.
    const before = post?.authors ?? (me === null ? [] : [me.slug])
    if (authors !== null && v.authors.length > 0 && v.authors.join(',') !== before.join(',')) b.authors = v.authors
    return b
  }

  const loaded = (p: Post, etag: string | null) => {
    post = p
    base = etag
    heading.textContent = p.title
    id = p.id
    for (const b of [revisionsButton, linkButton, deleteButton]) b.disabled = false
    // A contributor cannot change a post once it has been published: it opens to be read.
    readOnly(contributor && (p.status !== 'draft' || p.published_at != null))
  }

  const save = () => {
    if (saving) return
    saving = true
    const sent = values()
    const headers: Record<string, string> = base === null ? {} : { 'if-match': base }
    const request = id === null
      ? shell.api.call<Post>('POST', '/posts', { json: body(sent) })
      : shell.api.call<Post>('PUT', `/posts/${id}`, { json: body(sent), headers })
    request.then(({ body: answer, headers: h }) => {
      const wasNew = id === null
      // An excerpt left empty was derived by the service: it stays empty here, following the content.
      const p = sent.excerpt === '' ? { ...answer, excerpt: '' } : answer
      sessionStorage.removeItem(draftKey(id))
      loaded(p, h.get('etag'))
      // What the service made of it (a derived slug, tags folded) shows, unless the writer typed on meanwhile.
      if (sameValues(values(), sent)) apply(valuesOf(p))
      if (wasNew) history.replaceState(null, '', `#/posts/${p.id}`)
      shell.alert(null)
      clearErrors()
      changed()
      shell.say('Saved')
    }, async (err: unknown) => {
      if (err instanceof Problem && err.status === 412) await conflict(sent)
      else if (err instanceof Problem) showErrors(err)
      else shell.alert(`Not saved: ${String(err)}`)
    }).finally(() => { saving = false })
  }

  // Someone saved a newer version: both are shown and the writer chooses; their text stays theirs.
  const dialog = h('dialog', { class: 'conflict', 'aria-labelledby': 'conflict-title', 'aria-describedby': 'conflict-what' })
  const conflict = async (mine: Values) => {
    let theirs: Post
    let etag: string | null
    try {
      const answer = await shell.api.call<Post>('GET', `/posts/${id}`)
      theirs = answer.body
      etag = answer.headers.get('etag')
    } catch (err) {
      shell.alert(`Not saved: ${err instanceof Problem ? err.detail : String(err)} Your text is still here.`)
      return
    }
    const diff = h('pre', { class: 'diff', tabindex: 0, 'aria-label': 'Their content compared with yours' },
      ...diffLines(theirs.content, mine.content).map(part => part.added
        ? h('ins', {}, part.value)
        : part.removed ? h('del', {}, part.value) : h('span', {}, part.value)))
    const keep = h('button', { type: 'button', class: 'primary' }, 'Keep mine')
    const take = h('button', { type: 'button' }, 'Take theirs')
    dialog.replaceChildren(
      h('h2', { id: 'conflict-title' }, 'This post changed since you opened it'),
      h('p', { id: 'conflict-what' }, `Saved by someone else at ${new Date(theirs.updated_at).toLocaleTimeString()}. Keep mine saves your version over theirs; Take theirs loads theirs and sets yours aside in this tab.`),
      h('div', { class: 'versions' },
        h('section', { 'aria-label': 'Your version' }, h('h3', {}, 'Yours'), h('p', { class: 'version-title' }, mine.title)),
        h('section', { 'aria-label': 'Their version' }, h('h3', {}, 'Theirs'), h('p', { class: 'version-title' }, theirs.title))),
      h('p', { class: 'legend' }, h('del', {}, 'only theirs'), ' ', h('ins', {}, 'only yours')),
      diff,
      h('div', { class: 'actions' }, keep, take))
    keep.addEventListener('click', () => {
      dialog.close()
      base = etag
      if (post !== null) post = { ...theirs }
      save()
    })
    take.addEventListener('click', () => {
      dialog.close()
      sessionStorage.setItem(asideKey(id), JSON.stringify(mine))
      loaded(theirs, etag)
      apply(valuesOf(theirs))
      sessionStorage.removeItem(draftKey(id))
      changed()
      showAside()
      shell.say('Their version is loaded')
    })
    dialog.showModal()
    keep.focus()
  }

  const showAside = () => {
    const aside = sessionStorage.getItem(asideKey(id))
    if (aside === null) return
    note.hidden = false
    note.replaceChildren('Your version is set aside in this tab. ', h('button', {
      type: 'button',
      onclick: () => {
        apply(JSON.parse(aside) as Values)
        sessionStorage.removeItem(asideKey(id))
        note.hidden = true
        changed()
        md.view.focus()
      },
    }, 'Put my version back'))
  }

  const readOnlyNote = h('p', { class: 'note', hidden: true }, 'This post has been published: as a contributor you can read it, not change it.')
  function readOnly (on: boolean): void {
    readOnlyNote.hidden = !on
    // The post's own status shows, though a contributor may not choose it.
    const shown = post?.status ?? 'draft'
    if (on && !Array.from(status.options).some(o => o.value === shown)) status.append(h('option', { value: shown }, shown))
    for (const c of [...Object.values(controls), featureInput, tags.input]) c.disabled = on || (c === publishAt && contributor)
    for (const b of [saveButton, deleteButton]) b.disabled = on
    md.setReadOnly(on)
  }

  const saveButton = h('button', { type: 'submit', class: 'primary', 'aria-keyshortcuts': 'Control+S Meta+S' }, 'Save')
  const revisionsButton = h('button', { type: 'button', disabled: id === null, 'aria-expanded': 'false' }, 'Revisions')
  const linkButton = h('button', { type: 'button', disabled: id === null }, 'Preview link')
  const deleteButton = h('button', { type: 'button', class: 'danger', disabled: id === null }, 'Delete')

  const revisions = revisionsPanel(shell, {
    postId: () => id,
    base: () => base,
    current: () => md.text(),
    restored: (p, etag) => {
      const now = values()
      if (post !== null && !sameValues(now, valuesOf(post))) sessionStorage.setItem(asideKey(id), JSON.stringify(now))
      loaded(p, etag)
      apply(valuesOf(p))
      sessionStorage.removeItem(draftKey(id))
      changed()
      showAside()
    },
  })
  revisionsButton.setAttribute('aria-controls', revisions.element.id)
  revisionsButton.addEventListener('click', () => {
    const open = revisions.element.hidden
    revisions.element.hidden = !open
    revisionsButton.setAttribute('aria-expanded', String(open))
    if (open) start(revisions.load())
  })

  const links = previewLinksPanel(shell, () => id)
  linkButton.addEventListener('click', () => { start(links.make()) })

  const confirmDelete = h('dialog', { class: 'confirm', 'aria-labelledby': 'delete-title' })
  deleteButton.addEventListener('click', () => {
    const yes = h('button', { type: 'button', class: 'danger' }, 'Delete post')
    const no = h('button', { type: 'button' }, 'Cancel')
    confirmDelete.replaceChildren(h('h2', { id: 'delete-title' }, `Delete “${title.value}”?`), h('p', {}, 'The post, its revisions and its preview links are deleted. This cannot be undone.'), h('div', { class: 'actions' }, yes, no))
    no.addEventListener('click', () => { confirmDelete.close(); deleteButton.focus() })
    yes.addEventListener('click', () => {
      confirmDelete.close()
      shell.api.call('DELETE', `/posts/${id}`, { headers: base === null ? {} : { 'if-match': base } }).then(() => {
        sessionStorage.removeItem(draftKey(id))
        sessionStorage.removeItem(asideKey(id))
        shell.say('Deleted')
        shell.go('#/')
      }, (err: unknown) => {
        shell.alert(err instanceof Problem && err.status === 412 ? 'Not deleted: someone saved this post since you opened it. Reload to see their version.' : `Not deleted: ${(err as Error).message}`)
      })
    })
    confirmDelete.showModal()
    no.focus()
  })

  featureInput.addEventListener('change', () => {
    const file = featureInput.files?.[0]
    if (file === undefined) return
    rows.feature_image.error.hidden = true
    upload(shell, file).then(media => {
      featureImage = { id: media.id, url: mediaImage(media.id, 640), alt: media.alt }
      featureInput.value = ''
      drawFeature()
      changed()
      shell.say('Image uploaded')
    }, (err: unknown) => {
      rows.feature_image.error.hidden = false
      rows.feature_image.error.textContent = `Not uploaded: ${err instanceof Problem ? err.detail : String(err)}`
    })
  })
  publishAt.addEventListener('input', () => { if (publishAt.value !== '' && status.value !== 'scheduled') status.value = 'scheduled' })

  const form = h('form', { class: 'editor', 'aria-label': 'Post', novalidate: true },
    h('div', { class: 'toolbar' },
      h('a', { href: '#/', class: 'back' }, 'Posts'),
      saveButton, dirty,
      h('span', { class: 'spacer' }),
      revisionsButton, linkButton, deleteButton),
    note,
    readOnlyNote,
    h('div', { class: 'fields' }, rows.title.row, rows.slug.row, rows.status.row, rows.publish_at.row, tags.row, authors?.row),
    h('div', { class: 'write' },
      h('div', { class: 'row content' }, h('span', { class: 'label', id: 'content-label' }, 'Content'), md.host),
      h('div', { class: 'row' }, h('h2', { class: 'label' }, 'Preview'), preview)),
    h('div', { class: 'fields' }, rows.excerpt.row, h('div', { class: 'row' }, rows.feature_image.row, featureShown)),
    h('fieldset', { class: 'fields seo' }, h('legend', {}, 'Search engines and sharing'), rows.meta_title.row, rows.meta_description.row, rows.canonical_url.row))
  // An existing post's form shows only once its values are in: keys typed into an empty form would be overwritten.
  const loading = h('p', { class: 'loading', role: 'status', hidden: id === null }, 'Loading the post…')
  form.hidden = id !== null
  form.addEventListener('submit', event => { event.preventDefault(); save() })
  form.addEventListener('input', event => { if (event.target !== featureInput) changed() })
  form.addEventListener('change', event => { if (event.target !== featureInput) changed() })

  const blank = valuesOf({ id: 0, title: '', content: '', status: 'draft', updated_at: '', authors: me === null ? [] : [me.slug] })

  const restoreDraft = (fromServer: Values) => {
    const draft = readDraft(draftKey(id))
    if (draft !== null && !sameValues(draft.values, fromServer)) {
      apply(draft.values)
      base = draft.base ?? base
      dirty.hidden = false
      note.hidden = false
      note.textContent = 'Your unsaved changes, kept in this tab, are back. Save to keep them.'
    }
    showAside()
  }

  if (id === null) {
    apply(blank)
    restoreDraft(blank)
  } else {
    shell.api.call<Post>('GET', `/posts/${id}`).then(({ body: p, headers }) => {
      loaded(p, headers.get('etag'))
      apply(valuesOf(p))
      restoreDraft(valuesOf(p))
      loading.hidden = true
      form.hidden = false
      md.host.dataset.ready = 'true'
    }, (err: unknown) => {
      loading.hidden = true
      heading.textContent = 'Post not found'
      shell.alert(err instanceof Problem ? err.detail : String(err))
    })
  }

  const element = h('section', { class: 'screen editor-screen' }, heading, loading, form, revisions.element, links.element, dialog, confirmDelete)
  return { element, save }
}
