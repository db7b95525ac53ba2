# Exactly dynamostore.TableSpecs(dynamostore.TablesWithPrefix(var.table_prefix)), plus TTL on
# purgeAt (logs, registry) and point-in-time recovery, which CreateTable does not carry.

resource "aws_dynamodb_table" "jobs" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
    # The capacity keeper and auto scaling own the mode and capacities: see log_pages below.
    ignore_changes = [billing_mode, read_capacity, write_capacity, global_secondary_index]
  }

  name           = "${var.table_prefix}-jobs"
  billing_mode   = var.table_billing_mode
  read_capacity  = local.provisioned_tables ? var.table_capacity_min : null
  write_capacity = local.provisioned_tables ? var.table_capacity_min : null
  hash_key       = "id"

  attribute {
    name = "id"
    type = "N"
  }
  attribute {
    name = "dueShard"
    type = "N"
  }
  attribute {
    name = "dueKey"
    type = "S"
  }
  attribute {
    name = "groupId"
    type = "N"
  }
  attribute {
    name = "shard"
    type = "N"
  }

  # Sparse: only running jobs carry dueShard.
  global_secondary_index {
    name            = "due"
    hash_key        = "dueShard"
    range_key       = "dueKey"
    projection_type = "ALL"
    read_capacity   = local.provisioned_tables ? var.table_capacity_min : null
    write_capacity  = local.provisioned_tables ? var.table_capacity_min : null
  }
  global_secondary_index {
    name            = "byGroup"
    hash_key        = "groupId"
    range_key       = "id"
    projection_type = "KEYS_ONLY"
    read_capacity   = local.provisioned_tables ? var.table_capacity_min : null
    write_capacity  = local.provisioned_tables ? var.table_capacity_min : null
  }
  # Every job by its scan shard: the unfiltered job list, without a scan.
  global_secondary_index {
    name            = "byShard"
    hash_key        = "shard"
    range_key       = "id"
    projection_type = "KEYS_ONLY"
    read_capacity   = local.provisioned_tables ? var.table_capacity_min : null
    write_capacity  = local.provisioned_tables ? var.table_capacity_min : null
  }

  point_in_time_recovery {
    enabled = true
  }
}

resource "aws_dynamodb_table" "groups" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-groups"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "N"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Log pages (internal/adapter/dynamostore doc.go): a new table, since its key schema differs from the
# per-log "<prefix>-logs" table of earlier versions (forgotten below, not destroyed).
resource "aws_dynamodb_table" "log_pages" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
    # With table_billing_mode PROVISIONED, auto scaling moves the table's and its index's capacity
    # and the scan's capacity keeper switches the table to on demand when it is quiet and back
    # when steady load returns (docs/aws.md#provisioned-capacity): Terraform leaves both alone,
    # so a plan never undoes them. So changing table_billing_mode of an existing table is one
    # `aws dynamodb update-table` (docs/aws.md), not a plan.
    ignore_changes = [billing_mode, read_capacity, write_capacity, global_secondary_index]
  }

  name           = "${var.table_prefix}-logpages"
  billing_mode   = var.table_billing_mode
  read_capacity  = local.provisioned_tables ? var.table_capacity_min : null
  write_capacity = local.provisioned_tables ? var.table_capacity_min : null
  hash_key       = "pk"
  range_key      = "sk"

  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "sk"
    type = "S"
  }
  attribute {
    name = "part"
    type = "N"
  }
  attribute {
    name = "tkey"
    type = "S"
  }

  global_secondary_index {
    name               = "byTime"
    hash_key           = "part"
    range_key          = "tkey"
    projection_type    = "INCLUDE"
    non_key_attributes = ["lo", "jobs", "groups"]
    read_capacity      = local.provisioned_tables ? var.table_capacity_min : null
    write_capacity     = local.provisioned_tables ? var.table_capacity_min : null
  }

  ttl {
    attribute_name = "purgeAt"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

# The per-log table of earlier versions: forget it without destroying it; delete it by hand
# once its logs' retention has passed (or export what you want to keep first).
removed {
  from = aws_dynamodb_table.logs
  lifecycle {
    destroy = false
  }
}

# The occurrences table (dedupe markers) is gone: log ids derive from the occurrence
# (internal/adapter/dynamostore/doc.go). Forget it without destroying it; delete it by hand once its
# markers' TTL has passed.
removed {
  from = aws_dynamodb_table.occurrences
  lifecycle {
    destroy = false
  }
}

resource "aws_dynamodb_table" "registry" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-registry"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "registryKey"
  range_key    = "member"

  attribute {
    name = "registryKey"
    type = "S"
  }
  attribute {
    name = "member"
    type = "S"
  }

  ttl {
    attribute_name = "purgeAt"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

resource "aws_dynamodb_table" "leases" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-leases"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "name"

  attribute {
    name = "name"
    type = "S"
  }

  # Misfire episodes go once no late fire they cover can arrive; shard leases carry no purgeAt.
  ttl {
    attribute_name = "purgeAt"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

resource "aws_dynamodb_table" "reports" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-reports"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "day"

  attribute {
    name = "day"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}

resource "aws_dynamodb_table" "counters" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-counters"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "name"

  attribute {
    name = "name"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Console users, saved GLUE sources, sign-in attempt counters and signed-out
# sessions (dynamostore.TableConsole); the last two expire by TTL on purgeAt.
resource "aws_dynamodb_table" "console" {
  lifecycle {
    prevent_destroy = true # the data outlives the stack; see docs/aws.md to delete on purpose
  }

  name         = "${var.table_prefix}-console"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  ttl {
    attribute_name = "purgeAt"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

