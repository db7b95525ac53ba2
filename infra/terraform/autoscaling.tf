# Provisioned capacity for the steady tables, jobs and log pages (var.table_billing_mode =
# "PROVISIONED"): Application Auto Scaling on each table and index, read and write - one scalable target and one
# target-tracking policy each (AWS creates two CloudWatch alarms per policy, billed as alarms).
# Registering a target creates the service-linked role it uses. While the scan's capacity keeper
# has a table on demand, DynamoDB keeps these targets (their scaling fails then, harmlessly); they
# take over again from the keeper's starting capacity when it switches it back.

locals {
  provisioned_tables = var.table_billing_mode == "PROVISIONED"
  # table or index → its resource id; every one of them scales on reads and writes.
  scaled_parts = {
    "jobs"            = "table/${aws_dynamodb_table.jobs.name}"
    "jobs-due"        = "table/${aws_dynamodb_table.jobs.name}/index/due"
    "jobs-byGroup"    = "table/${aws_dynamodb_table.jobs.name}/index/byGroup"
    "jobs-byShard"    = "table/${aws_dynamodb_table.jobs.name}/index/byShard"
    "logpages"        = "table/${aws_dynamodb_table.log_pages.name}"
    "logpages-byTime" = "table/${aws_dynamodb_table.log_pages.name}/index/byTime"
  }
  scaled = local.provisioned_tables ? merge([
    for part, id in local.scaled_parts : {
      for dim in ["Read", "Write"] : "${part}-${lower(dim)}" => {
        resource_id = id
        dimension   = "dynamodb:${strcontains(id, "/index/") ? "index" : "table"}:${dim}CapacityUnits"
        metric      = "DynamoDB${dim}CapacityUtilization"
      }
    }
  ]...) : {}
}

resource "aws_appautoscaling_target" "table" {
  for_each = local.scaled

  service_namespace  = "dynamodb"
  resource_id        = each.value.resource_id
  scalable_dimension = each.value.dimension
  min_capacity       = var.table_capacity_min
  max_capacity       = var.table_capacity_max
}

resource "aws_appautoscaling_policy" "table" {
  for_each = local.scaled

  name               = "${var.name}-${each.key}"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.table[each.key].service_namespace
  resource_id        = aws_appautoscaling_target.table[each.key].resource_id
  scalable_dimension = aws_appautoscaling_target.table[each.key].scalable_dimension

  target_tracking_scaling_policy_configuration {
    target_value = var.table_target_utilization
    predefined_metric_specification {
      predefined_metric_type = each.value.metric
    }
  }
}
