# driftwatch on Nomad: a periodic batch job with one task group per slice (a group's `count` gives
# no stable index, so the slices are named), one PostgreSQL store; nomad-merge.nomad.hcl merges them.
# tests/run/test_fleet_examples.py reads the args below and parses them with driftwatch's CLI.
job "driftwatch-shards" {
  type = "batch"
  periodic {
    crons            = ["0,15,30,45 * * * *"]
    prohibit_overlap = true
  }
  dynamic "group" {
    for_each = [0, 1, 2, 3]
    labels   = ["slice-${group.value}"]
    content {
      task "report" {
        driver = "exec"
        config {
          command = "driftwatch"
          args    = ["report", "--inventory", "/etc/driftwatch/fleet.yaml", "--quiet",
                     "--shard", "${group.value}/4",
                     "--store", "postgresql://driftwatch@pg.internal:5432/driftwatch",
                     "--format", "json", "-o", "/srv/driftwatch/reports/shard-${group.value}.json"]
        }
        template {
          data        = "PGPASSWORD={{ with nomadVar \"nomad/jobs/driftwatch\" }}{{ .pg_password }}{{ end }}"
          destination = "secrets/pg.env"
          env         = true
        }
      }
    }
  }
}
