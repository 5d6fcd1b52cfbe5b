import { useState } from "preact/hooks";
import { api, ok, type Schemas } from "../api/client";
import { Link, navigate, seg } from "../router";
import { ActionForm, Field, Show, useLoad, text } from "../ui";

export function Templates() {
  const query = new URLSearchParams(location.search);
  const templates = useLoad(() => ok(api.GET("/api/v1/templates")), []);
  const [chosen, setChosen] = useState<Schemas["TemplateRecord"]>();
  return (
    <>
      <h1>Templates</h1>
      <Show loaded={templates}>
        {(list) => (
          <ul class="cards">
            {list.map((t) => (
              <li class="card">
                <h2>{t.display_name}</h2>
                <p>{t.description}</p>
                <p class="muted"><code>{t.image}</code></p>
                <button type="button" onClick={() => setChosen(t)}>Deploy {t.display_name}</button>
              </li>
            ))}
          </ul>
        )}
      </Show>
      {chosen && (
        <section aria-labelledby="deploy-template" class="card">
          <h2 id="deploy-template">Deploy {chosen.display_name}</h2>
          <ActionForm
            label={`Deploy ${chosen.display_name}`}
            submit="Deploy"
            action={(data) => {
              const env: Record<string, string> = {};
              for (const v of chosen.env) {
                const value = String(data.get(`env-${v.name}`) ?? "");
                if (value) env[v.name] = value;
              }
              return ok(
                api.POST("/api/v1/projects/{project}/environments/{environment}/templates/{template}", {
                  params: { path: { project: text(data, "project"), environment: text(data, "environment"), // The path parameter is typed as the catalogue's names; this one comes from the catalogue.
                  template: chosen.name as "postgres" } },
                  body: { name: text(data, "name") || undefined, env },
                }),
              );
            }}
            done={(deployed) => {
              const d = deployed as Schemas["Deployed"];
              const first = d.apps[0];
              if (first) navigate(`/projects/${seg(first.project)}/environments/${seg(first.environment)}/apps/${seg(first.name)}`);
            }}
          >
            <Field label="Project" name="project" required value={query.get("project") ?? ""} />
            <Field label="Environment" name="environment" required value={query.get("environment") ?? ""} />
            <Field label={`App name (empty: ${chosen.name})`} name="name" />
            {chosen.env.map((v) => (
              <Field label={`${v.name}${v.generate ? " (empty: generated)" : ""}`} name={`env-${v.name}`} placeholder={v.value ?? ""} />
            ))}
          </ActionForm>
          <p><Link href="/">Cancel</Link></p>
        </section>
      )}
    </>
  );
}
