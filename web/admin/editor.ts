import { diffLines } from 'diff'
import { Problem } from './api.ts'
import { field, h, showHtml, toLocalInput, start } from './dom.ts'
import { markdownEditor } from './markdown-editor.ts'
import { derivedExcerpt, type FeatureImage, mediaImage, type Post, sameValues, SEO_FIELDS, type Values } from './post.ts'
import { previewLinksPanel } from './preview-links.ts'
import { revisionsPanel } from './revisions.ts'
import type { Shell } from './shell.ts'
import { tagsField } from './tags-field.ts'

const STATUSES = ['draft', 'scheduled', 'published', 'archived']

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

function valuesOf (p: Post): Values {
  return {
    title: p.title,
    slug: p.slug ?? '',
    status: p.status,
    publish_at: toLocalInput(p.publish_at),
    tags: p.tags ?? [],
    excerpt: p.excerpt ?? '',
    meta_title: p.meta_title ?? '',
    meta_description: p.meta_description ?? '',
    canonical_url: p.canonical_url ?? '',
    content: p.content,
    feature_image: p.feature_image == null ? null : { id: p.feature_image.id, url: p.feature_image.url ?? mediaImage(p.feature_image.id, 640), alt: p.feature_image.alt ?? '' },
  }
}

export interface EditorScreen {
  readonly element: HTMLElement
  save (): void
}

/** A media made from an uploaded file (`POST /media`, the file as the form's part `file`). */
async function upload (shell: Shell, file: File): Promise<{ id: string, alt: string }> {
  const form = new FormData()
  form.append('file', file, file.name)
  const { body } = await shell.api.call<{ id: string, alt?: string | null }>('POST', '/media', { body: form })
  return { id: body.id, alt: body.alt ?? '' }
}

/** Image alt text from a file name: `red-bike_2.jpg` → `red bike 2`. */
function altOf (name: string): string {
  return name.replace(/\.[a-z0-9]+$/i, '').replace(/[-_]+/g, ' ').replace(/[[\]]/g, '').trim()
}

/**
 * One post in the editor: every field, the Markdown with its preview from `POST /render`, images
 * into `/media`, saving with `If-Match`, the choice when someone else saved first, the unsaved
 * draft kept in the tab, revisions, preview links and delete.
 */
export function editorScreen (shell: Shell, postId: number | null): EditorScreen {
  let id = postId
  let post: Post | null = null
  /** The version the writer's text is based on: the If-Match of the next save. */
  let base: string | null = null
  let saving = false
  let featureImage: FeatureImage | null = null

  const heading = h('h1', { tabindex: -1 }, id === null ? 'New post' : 'Loading…')
  const note = h('p', { class: 'note', hidden: true })
  const title = h('input', { type: 'text', required: true, maxlength: 200 })
  const slug = h('input', { type: 'text', pattern: '[a-z0-9]+(-[a-z0-9]+)*', maxlength: 100, spellcheck: 'false', autocapitalize: 'none' })
  const status = h('select', {}, ...STATUSES.map(s => h('option', { value: s }, s)))
  const publishAt = h('input', { type: 'datetime-local', step: 1 })
  const excerpt = h('textarea', { rows: 3, maxlength: 500 })
  const metaTitle = h('input', { type: 'text', maxlength: 300 })
  const metaDescription = h('textarea', { rows: 2, maxlength: 500 })
  const canonical = h('input', { type: 'url', maxlength: 2000, inputmode: 'url' })
  const featureInput = h('input', { type: 'file', accept: 'image/jpeg,image/png,image/webp,image/avif,image/gif' })
  const featureShown = h('div', { class: 'feature-shown' })
  const preview = h('section', { class: 'preview', 'aria-label': 'Preview', role: 'region', tabindex: 0 })
  const dirty = h('span', { class: 'dirty', hidden: true }, 'Unsaved changes')
  const tags = tagsField(shell.api, () => { changed() })
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
    title: field('Title', title),
    slug: field('Slug', slug, 'Lower-case letters, digits and dashes. Empty: made from the title.'),
    status: field('Status', status),
    publish_at: field('Publish at', publishAt, 'With status scheduled: when the post goes out (your local time).'),
    excerpt: field('Excerpt', excerpt, 'Empty: the beginning of the content.'),
    meta_title: field('Meta title', metaTitle),
    meta_description: field('Meta description', metaDescription),
    canonical_url: field('Canonical URL', canonical),
    feature_image: field('Feature image', featureInput),
  }

  const values = (): Values => ({
    title: title.value,
    slug: slug.value,
    status: status.value,
    publish_at: publishAt.value,
    tags: tags.value(),
    excerpt: excerpt.value,
    meta_title: metaTitle.value,
    meta_description: metaDescription.value,
    canonical_url: canonical.value,
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
    title.value = v.title
    slug.value = v.slug
    status.value = v.status
    publishAt.value = v.publish_at
    tags.set(v.tags)
    excerpt.value = v.excerpt
    metaTitle.value = v.meta_title
    metaDescription.value = v.meta_description
    canonical.value = v.canonical_url
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
    for (const r of [...Object.values(rows), { error: tags.error }]) { r.error.hidden = true; r.error.textContent = '' }
    for (const input of [title, slug, status, publishAt, excerpt, metaTitle, metaDescription, canonical, featureInput, tags.input]) input.removeAttribute('aria-invalid')
  }
  /** Each field's errors under it; those of fields without a place of their own (the content) in the alert. */
  const showErrors = (problem: Problem) => {
    clearErrors()
    let first: HTMLElement | null = null
    const elsewhere: string[] = []
    for (const e of problem.errors) {
      const name = e.field.split('/')[0] ?? ''
      const row = name in rows ? rows[name as keyof typeof rows] : null
      const target = name === 'tags'
        ? { error: tags.error, input: tags.input as HTMLElement }
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
    return b
  }

  const loaded = (p: Post, etag: string | null) => {
    post = p
    base = etag
    heading.textContent = p.title
    id = p.id
    for (const b of [revisionsButton, linkButton, deleteButton]) b.disabled = false
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
    h('div', { class: 'fields' }, rows.title.row, rows.slug.row, rows.status.row, rows.publish_at.row, tags.row),
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

  const blank = valuesOf({ id: 0, title: '', content: '', status: 'draft', updated_at: '' })

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
