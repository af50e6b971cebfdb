{{ config(materialized='view') }}
{{ cdc_typed_history("linkexpress_demo", "SALES", "CUSTOMERS") }}
