/** What a file holds that is not a post, counted apart by kind (none of it becomes a post). */
export type NotPosts = 'pages' | 'attachments' | 'menu_items' | 'comments' | 'users' | 'settings' | 'other'

/** A post as the source's file gives it, before the rules of this service are applied. */
export interface SourcePost {
  readonly title: string
  /** The content as HTML (converted to Markdown), or null when only Markdown is given. */
  readonly html: string | null
  /** Markdown the source kept beside its HTML (Ghost 1.x; this service's own WXR): taken as it is. */
  readonly markdown: string | null
  /** The source's own status word (`publish`, `future`, `published` …). */
  readonly status: string
  /** The source's date as written, for the messages; and as an instant, when it is one. */
  readonly dateText: string | null
  readonly date: Date | null
  readonly author: string | null
  readonly tags: readonly string[]
  readonly excerpt: string | null
  readonly slug: string | null
  /** The post's address at the source, whose last segment may become an alias. */
  readonly permalink: string | null
  readonly oldSlugs: readonly string[]
  /** Its feature image's URL, as the source gives it. */
  readonly featureImage: string | null
  /** Its feature image as an image of this service (its id), once fetched in; absent: the post's stays as it is. */
  readonly featureImageId?: string
  /** A text field that was longer than a reader keeps (the item is skipped). */
  readonly oversize: boolean
}

/** What a reader finds in a file, in the file's order. */
export type Entry =
  | { readonly kind: 'item', readonly key: string, readonly label: string, readonly source: SourcePost }
  | { readonly kind: 'other', readonly what: NotPosts, readonly count: number }
  | { readonly kind: 'warning', readonly item: string, readonly message: string }
