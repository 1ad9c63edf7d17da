import type { Config } from '../../../config.ts'

/**
 * Where readers find a post, its author and a preview: on the reading site when it is on
 * (SITE_BASE_URL + `/{slug}`, `/author/{slug}`, `/p/{token}`), else on the API itself
 * (`/posts/by-slug/{slug}`, `/authors/{slug}`, `/preview/{token}`). What feeds, the sitemap, a
 * preview link's `url` and its redirect once the post is published all say.
 */
export interface PublicUrls {
  /** The blog's home page, without a trailing slash (`''` for a relative API base). */
  readonly home: string
  post (slug: string): string
  author (slug: string): string
  preview (token: string): string
}

/** The public URLs under the settings: `apiBase` is the API's (PUBLIC_BASE_URL, or the request's own base). */
export function publicUrls (config: Config, apiBase: string): PublicUrls {
  const site = config.site.baseUrl
  if (site === null) {
    return {
      home: apiBase,
      post: slug => `${apiBase}/posts/by-slug/${slug}`,
      author: slug => `${apiBase}/authors/${slug}`,
      preview: token => `${apiBase}/preview/${token}`,
    }
  }
  return {
    home: site,
    post: slug => `${site}/${slug}`,
    author: slug => `${site}/author/${slug}`,
    preview: token => `${site}/p/${token}`,
  }
}
