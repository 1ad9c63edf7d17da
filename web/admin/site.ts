import { failureText, type FieldProblem, Problem } from './api.ts'
import { field, h } from './dom.ts'
import { mediaImage, upload } from './media.ts'
import { atLeast, type User } from './people.ts'
import type { Shell } from './shell.ts'

interface NavLink { label: string, url: string }
/** `GET /site` as the screen reads it (images are their facts; only the logo's id matters here). */
interface Settings {
  title: string
  description: string
  language: string
  logo: { id: string } | null
  accent_color: string
  navigation: NavLink[]
  posts_per_page: number
  url: string | null
}

/** One pair of the navigation's fields, in a group of its own (`Link 2`). */
interface NavRow { readonly element: HTMLFieldSetElement, readonly label: HTMLInputElement, readonly url: HTMLInputElement, readonly errors: { label: HTMLElement, url: HTMLElement } }

/**
 * `Site` (admins): the reading site's title, description, language, accent colour, paging, logo and
 * navigation, saved as one merge patch (`PATCH /site` with `If-Match`: a change made meanwhile is
 * never overwritten unseen); `View site` opens the site itself. A person below admin who opens its
 * address reads the settings and is told they cannot change them; an API key is no person, and
 * the service decides by its scopes.
 */
export function siteScreen (shell: Shell, me: User | null): HTMLElement {
  const mayChange = me === null || atLeast(me.role, 'admin')
  const heading = h('h1', { tabindex: -1 }, 'Site')
  let etag: string | null = null
  let logo: string | null = null

  const title = h('input', { type: 'text', required: true, maxlength: 200 })
  const description = h('textarea', { rows: 3, maxlength: 500 })
  const language = h('input', { type: 'text', maxlength: 35, spellcheck: 'false', autocapitalize: 'none' })
  // Text, not a colour picker: a value typed or pasted (`#0f766e`) is what is saved, and the service says when it is not one.
  const accent = h('input', { type: 'text', maxlength: 7, spellcheck: 'false', autocapitalize: 'none', class: 'short' })
  const perPage = h('input', { type: 'number', min: 1, max: 50, step: 1, inputmode: 'numeric', class: 'short' })
  const logoInput = h('input', { type: 'file', accept: 'image/jpeg,image/png,image/webp,image/avif,image/gif,image/svg+xml' })
  const rows = {
    title: field('Site title', title),
    description: field('Description', description, 'For search engines and link previews; up to 500 characters.'),
    language: field('Language', language, 'The language of the posts, as a tag such as en or de-CH.'),
    accent_color: field('Accent color', accent, 'Links and highlights on the site, as #rrggbb.'),
    posts_per_page: field('Posts per page', perPage, '1 to 50 on the home page and each list.'),
    logo: field('Logo', logoInput),
  }
  const logoShown = h('div', { class: 'avatar-shown logo-shown' })
  const drawLogo = () => {
    logoShown.replaceChildren(...(logo === null
      ? []
      : [h('img', { src: mediaImage(logo, 320), alt: 'The site\'s logo', height: 48 }),
          h('button', { type: 'button', onclick: () => { logo = null; drawLogo(); shell.say('Logo removed: Save site to keep it') } }, 'Remove logo')]))
  }
  logoInput.addEventListener('change', () => {
    const file = logoInput.files?.[0]
    if (file === undefined) return
    upload(shell, file).then(media => {
      logo = media.id
      logoInput.value = ''
      drawLogo()
      shell.say('Logo uploaded: Save site to keep it')
    }, (err: unknown) => { shell.alert(`The logo was not uploaded: ${failureText(err)}`) })
  })

  // The navigation: each link a group of two fields, numbered as the site shows them.
  const links: NavRow[] = []
  const linkList = h('div', { class: 'nav-links' })
  const addLink = h('button', { type: 'button' }, 'Add link')
  const renumber = () => {
    links.forEach((l, i) => {
      l.element.querySelector('legend')!.textContent = `Link ${i + 1}`
      const remove = l.element.querySelector<HTMLButtonElement>('.remove-link')!
      remove.textContent = `Remove link ${l.label.value.trim() === '' ? i + 1 : l.label.value.trim()}`
    })
    addLink.disabled = links.length >= 20
  }
  const addRow = (link: NavLink): NavRow => {
    const label = h('input', { type: 'text', maxlength: 100, value: link.label })
    const url = h('input', { type: 'text', maxlength: 2000, inputmode: 'url', spellcheck: 'false', autocapitalize: 'none', value: link.url })
    const labelField = field('Label', label)
    const urlField = field('URL', url, 'A path on the site (/about) or an address (https://…).')
    const remove = h('button', { type: 'button', class: 'remove-link' })
    const element = h('fieldset', { class: 'nav-link' }, h('legend', {}), labelField.row, urlField.row, h('div', { class: 'actions' }, remove))
    const row: NavRow = { element, label, url, errors: { label: labelField.error, url: urlField.error } }
    label.addEventListener('input', renumber)
    remove.addEventListener('click', () => {
      const at = links.indexOf(row)
      links.splice(at, 1)
      element.remove()
      renumber()
      shell.say('Link removed: Save site to keep it')
      // Focus stays near: on the link now in its place, else on Add link.
      const near: HTMLElement = links[at]?.label ?? links[at - 1]?.label ?? addLink
      near.focus()
    })
    links.push(row)
    linkList.append(element)
    renumber()
    return row
  }
  addLink.addEventListener('click', () => { addRow({ label: '', url: '' }).label.focus() })

  const viewSite = h('a', { href: '#', target: '_blank', rel: 'noopener', class: 'button', hidden: true }, 'View site')
  const show = (s: Settings, tag: string | null) => {
    etag = tag
    title.value = s.title
    description.value = s.description
    language.value = s.language
    accent.value = s.accent_color
    perPage.value = String(s.posts_per_page)
    logo = s.logo?.id ?? null
    drawLogo()
    for (const l of links.splice(0)) l.element.remove()
    for (const l of s.navigation) addRow(l)
    renumber()
    viewSite.hidden = s.url === null
    if (s.url !== null) viewSite.href = s.url
  }

  const inputs = [title, description, language, accent, perPage, logoInput]
  const clearErrors = () => {
    for (const r of Object.values(rows)) { r.error.hidden = true; r.error.textContent = '' }
    for (const l of links) for (const e of Object.values(l.errors)) { e.hidden = true; e.textContent = '' }
    for (const input of [...inputs, ...links.flatMap(l => [l.label, l.url])]) input.removeAttribute('aria-invalid')
  }
  /** Each field's error under it (`navigation/2/url` under the third link's URL); any other in the alert. */
  const showErrors = (problem: Problem) => {
    clearErrors()
    let first: HTMLElement | null = null
    const elsewhere: string[] = []
    const place = (e: FieldProblem): { error: HTMLElement, input: HTMLElement } | null => {
      const [name = '', index, member] = e.field.split('/')
      if (name in rows) {
        const r = rows[name as keyof typeof rows]
        return { error: r.error, input: r.row.querySelector<HTMLElement>('input,textarea')! }
      }
      const link = name === 'navigation' && index !== undefined ? links[Number(index)] : undefined
      if (link === undefined) return null
      return member === 'url' ? { error: link.errors.url, input: link.url } : { error: link.errors.label, input: link.label }
    }
    for (const e of problem.errors) {
      const target = place(e)
      if (target === null) {
        elsewhere.push(`${e.field === '' ? 'The settings' : e.field}: ${e.message}`)
        continue
      }
      target.error.hidden = false
      target.error.textContent = e.message
      target.input.setAttribute('aria-invalid', 'true')
      first ??= target.input
    }
    shell.alert([`Not saved: ${problem.detail}`, ...elsewhere].join(' '))
    first?.focus()
  }

  // The swatch shows the colour typed as an SVG fill: the page's policy refuses inline styles.
  const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' })
  const pick = h('div', { class: 'pick' })
  accent.replaceWith(pick)
  pick.append(accent, swatch)
  const form = h('form', { class: 'site-form', novalidate: true, 'aria-labelledby': 'site-title' },
    h('fieldset', { class: 'fields' },
      h('legend', { id: 'site-title' }, 'The site'),
      rows.title.row, rows.language.row, rows.description.row,
      rows.accent_color.row,
      rows.posts_per_page.row,
      h('div', { class: 'row' }, rows.logo.row, logoShown)),
    h('section', { class: 'panel', 'aria-labelledby': 'navigation-title' },
      h('h2', { id: 'navigation-title' }, 'Navigation'),
      h('p', { class: 'hint' }, 'The links at the top of every page, in this order; up to 20.'),
      linkList,
      h('div', { class: 'actions' }, addLink)),
    h('div', { class: 'actions save-site' }, h('button', { type: 'submit', class: 'primary' }, 'Save site'), viewSite))
  const drawSwatch = (): void => {
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg')
    svg.setAttribute('viewBox', '0 0 1 1')
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect')
    rect.setAttribute('width', '1')
    rect.setAttribute('height', '1')
    rect.setAttribute('fill', /^#[0-9a-f]{6}$/i.test(accent.value.trim()) ? accent.value.trim() : 'none')
    svg.append(rect)
    swatch.replaceChildren(svg)
  }
  accent.addEventListener('input', drawSwatch)

  form.addEventListener('submit', event => {
    event.preventDefault()
    const per = perPage.value.trim()
    const patch = {
      title: title.value.trim(),
      description: description.value.trim(),
      language: language.value.trim() === '' ? null : language.value.trim(),
      accent_color: accent.value.trim() === '' ? null : accent.value.trim(),
      posts_per_page: per === '' ? null : Number(per),
      logo,
      // A pair left empty is no link.
      navigation: links.map(l => ({ label: l.label.value.trim(), url: l.url.value.trim() })).filter(l => l.label !== '' || l.url !== ''),
    }
    // Those dropped would shift the service's indices past the rows shown: drop them from the screen first.
    for (const l of links.filter(l => l.label.value.trim() === '' && l.url.value.trim() === '')) { links.splice(links.indexOf(l), 1); l.element.remove() }
    renumber()
    shell.api.call<Settings>('PATCH', '/site', {
      body: JSON.stringify(patch),
      headers: { 'content-type': 'application/merge-patch+json', ...(etag === null ? {} : { 'if-match': etag }) },
    }).then(({ body, headers }) => {
      clearErrors()
      show(body, headers.get('etag'))
      drawSwatch()
      shell.alert(null)
      shell.say('Site saved')
    }, (err: unknown) => {
      if (err instanceof Problem && err.status === 422) showErrors(err)
      else shell.alert(err instanceof Problem && err.status === 412 ? 'Not saved: another admin changed the site\'s settings since you opened them. Reload to see theirs (yours are lost on reload: note them first).' : `Not saved: ${failureText(err)}`)
    })
  })

  const section = h('section', { class: 'screen site' }, heading, h('p', { class: 'loading', role: 'status' }, 'Loading the site\'s settings…'))
  shell.api.call<Settings>('GET', '/site').then(({ body, headers }) => {
    show(body, headers.get('etag'))
    drawSwatch()
    if (mayChange) section.replaceChildren(heading, form)
    else {
      for (const control of Array.from(form.querySelectorAll<HTMLInputElement | HTMLButtonElement | HTMLTextAreaElement>('input,textarea,button'))) control.disabled = true
      section.replaceChildren(heading, h('p', { class: 'note' }, 'Only an admin changes the site\'s settings: you can read them, not change them.'), form)
    }
  }, (err: unknown) => {
    section.replaceChildren(heading, h('p', {}, `The site's settings could not be read: ${failureText(err)}`))
  })
  return section
}
