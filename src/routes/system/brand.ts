/**
 * How the service shows itself to people, in one place: its name, its mark and its colours, used
 * by /docs (src/routes/system/docs-routes.ts) and the editor at /admin (web/admin, built by
 * scripts/bundle-admin.ts), so that both pages look like one service.
 */
export const SERVICE_NAME = 'Blog Post Service'

export const COLOURS = {
  ink: '#172033',
  muted: '#5b6476',
  line: '#c9cfdb',
  page: '#f5f7fb',
  brand: '#1d4ed8',
  focus: '#b45309',
} as const

/** The mark: a rounded square in the brand colour with a "B". Decorative beside the name. */
export const MARK_SVG = `<svg class="mark" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false"><rect width="32" height="32" rx="7" fill="${COLOURS.brand}"/><path d="M9 8h9.5a5 5 0 0 1 1.6 9.7A5.4 5.4 0 0 1 18.8 28H9zm4 4v4.2h5a2.1 2.1 0 0 0 0-4.2zm0 7.6V24h5.6a2.2 2.2 0 0 0 0-4.4z" fill="#fff"/></svg>`

/**
 * Swagger UI's page (its public `theme` option: a style sheet and a script served beside its own
 * assets) in the service's look: the service's header instead of the framework's top bar.
 */
export const DOCS_THEME_CSS = `
body { margin: 0; background: ${COLOURS.page}; color: ${COLOURS.ink}; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.service-top { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1rem; padding: 0.6rem 1rem; background: ${COLOURS.ink}; color: #fff; }
.service-top a { color: #fff; }
.service-brand { display: inline-flex; align-items: center; gap: 0.5rem; text-decoration: none; font-weight: 650; font-size: 1rem; }
.service-brand .part { font-weight: 400; opacity: 0.85; }
.service-brand .part::before { content: "·"; margin-right: 0.5rem; }
.service-top nav { margin-left: auto; display: flex; gap: 1rem; }
.swagger-ui .info .title { color: ${COLOURS.ink}; }
.swagger-ui .info a, .swagger-ui a.nostyle { color: ${COLOURS.brand}; }
.swagger-ui .btn.authorize { color: ${COLOURS.brand}; border-color: ${COLOURS.brand}; }
.swagger-ui .btn.authorize svg { fill: ${COLOURS.brand}; }
.swagger-ui .opblock-tag { border-bottom-color: ${COLOURS.line}; }
:focus-visible { outline: 3px solid ${COLOURS.focus}; outline-offset: 2px; }
`

/** Puts the service's header above Swagger UI's content (its own top bar is left out by its layout). */
export const DOCS_THEME_JS = `
(function () {
  var header = document.createElement('header');
  header.className = 'service-top';
  header.innerHTML = ${JSON.stringify(`<a class="service-brand" href="/docs">${MARK_SVG}<span>${SERVICE_NAME}</span><span class="part">API reference</span></a><nav aria-label="Service"><a href="/admin">Editor</a><a href="/openapi.json">OpenAPI document</a></nav>`)};
  document.body.insertBefore(header, document.body.firstChild);
})();
`
