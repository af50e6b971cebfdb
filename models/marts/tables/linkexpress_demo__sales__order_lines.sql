{{ config(materialized='view') }}
{{ cdc_typed_current_state("linkexpress_demo", "SALES", "ORDER_LINES") }}
