// Package deploy holds memstream's deployment files: deploy/compose (Docker
// Compose with Kafka, PostgreSQL/pgvector, every role, Prometheus and
// Grafana), deploy/k8s (Deployments per role, Service, HPAs, PDBs, probes,
// ConfigMap/Secret wiring), deploy/prometheus/alerts.yml and the Grafana
// dashboard in deploy/grafana. It has no Go API: its test keeps the files
// honest, parsing every YAML and JSON file and failing when a dashboard
// panel, alert or autoscaler names a metric memstream does not export or an
// environment variable that is not a configuration key.
package deploy
