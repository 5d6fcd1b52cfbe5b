import type { ComponentChildren } from "preact";

/** A secret shown this once: a token, a temporary password. */
export function ShownOnce(props: { label: string; secret: string; done: () => void; children: ComponentChildren }) {
  return (
    <section class="shown-once" aria-label={props.label}>
      <h2>{props.label}</h2>
      <p>{props.children}</p>
      <output class="secret" data-testid="shown-once">{props.secret}</output>
      <p>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            navigator.clipboard?.writeText(props.secret).catch(() => {});
          }}
        >
          Copy
        </button>{" "}
        <button type="button" onClick={props.done}>
          I have kept it
        </button>
      </p>
    </section>
  );
}
