# The fleet's report from the shards' JSON reports (nomad-shards.nomad.hcl), 10 minutes after them.
# tests/run/test_fleet_examples.py reads the args below and parses them with driftwatch's CLI.
job "driftwatch-merge" {
  type = "batch"
  periodic {
    crons            = ["10,25,40,55 * * * *"]
    prohibit_overlap = true
  }
  group "merge" {
    task "merge" {
      driver = "exec"
      config {
        command = "driftwatch"
        args    = ["report", "--merge", "/srv/driftwatch/reports/shard-0.json", "/srv/driftwatch/reports/shard-1.json",
                   "/srv/driftwatch/reports/shard-2.json", "/srv/driftwatch/reports/shard-3.json", "--quiet",
                   "--email", "ops@example.com", "--prometheus", "/var/lib/node_exporter/textfile/driftwatch.prom"]
      }
    }
  }
}
